// Loading the handlers into the app: the profiler's startup code (put into the first module's
// <Module>..cctor) loads this assembly by path and calls Startup.Start, which loads each
// handler assembly, resolves the AssemblyRefs the wrapped code holds, and says which handler
// types it found. The profiler wraps methods only for those, after this returned.

using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;

namespace Corprof.Instrumentation
{
    /// <summary>Called once by the profiler's startup code; not for handlers.</summary>
    public static class Startup
    {
        private static readonly object Gate = new object();
        private static readonly Dictionary<string, string> Paths = new Dictionary<string, string>();
        private static readonly Dictionary<string, string> Definitions = new Dictionary<string, string>();
        private static bool started;
        private static bool running;
        private static long found;

        /// <summary>
        /// The bit of the answer saying that this assembly resolves for the app's code: the code
        /// wrapped for a Rust handler that ends at its task's completion names it.
        /// </summary>
        public const long Resolvable = 1L << 63;

        /// <summary>
        /// Loads the handlers <paramref name="config"/> lists (lines of tab-separated fields:
        /// <c>handler, bit, assembly path, type full name, definition names</c>, bits 0 to 62) and
        /// answers a mask with the bit of each handler type found, and <see cref="Resolvable"/>
        /// once the assembly resolution is watched. A second call answers the first one's mask
        /// (waiting for it); a call from inside the first, on its thread (app code the loading
        /// runs, wrapped with the startup code too), throws, and its caller's guard swallows that:
        /// only a finished startup's answer may reach the profiler.
        /// </summary>
        public static long Start(string config)
        {
            lock (Gate)
            {
                if (running)
                {
                    throw new InvalidOperationException("corprof: the startup was called from inside itself");
                }
                if (started)
                {
                    return found;
                }
                started = true;
                running = true;
                try
                {
                    return Run(config);
                }
                finally
                {
                    running = false;
                }
            }
        }

        private static long Run(string config)
        {
            var handlers = new List<string[]>();
            foreach (var line in (config ?? "").Split('\n'))
            {
                var fields = line.Split('\t');
                if (fields.Length == 5 && fields[0] == "handler")
                {
                    handlers.Add(fields);
                    Paths[Path.GetFileNameWithoutExtension(fields[2])] = fields[2];
                    string names;
                    Definitions[fields[3]] = Definitions.TryGetValue(fields[3], out names) ? names + ", " + fields[4] : fields[4];
                }
            }
            try
            {
                AppDomain.CurrentDomain.AssemblyResolve += Resolve;
            }
            catch (Exception e)
            {
                Log.Line("corprof: managed handlers: cannot watch assembly resolution: " + e.GetType().FullName + ": " + e.Message);
                return 0;
            }
            found |= Resolvable;
            foreach (var h in handlers)
            {
                int bit;
                if (!int.TryParse(h[1], out bit) || bit < 0 || bit > 62)
                {
                    continue;
                }
                string why = Check(h[2], h[3]);
                if (why == null)
                {
                    found |= 1L << bit;
                }
                else
                {
                    Log.Line("corprof: managed handler " + h[3] + " (definition " + h[4] + ") " + why + "; its methods are not wrapped");
                }
            }
            return found;
        }

        /// <summary>Null when <paramref name="typeName"/> is a class of the assembly at <paramref name="path"/>, else why not.</summary>
        private static string Check(string path, string typeName)
        {
            try
            {
                var assembly = Assembly.LoadFrom(path);
                // The wrapped code names the assembly by the file's name: a binding to another
                // name would fail in the JIT, inside the app's call.
                if (assembly.GetName().Name != Path.GetFileNameWithoutExtension(path))
                {
                    return "is in " + path + ", whose assembly is named " + assembly.GetName().Name + ", not as the file";
                }
                var type = assembly.GetType(typeName, false);
                if (type == null || !type.IsClass || type.ContainsGenericParameters)
                {
                    return "is no non-generic class of " + path;
                }
                return null;
            }
            catch (Exception e)
            {
                return "cannot be loaded from " + path + ": " + e.GetType().FullName + ": " + e.Message;
            }
        }

        private static Assembly Resolve(object sender, ResolveEventArgs args)
        {
            try
            {
                var name = new AssemblyName(args.Name).Name;
                var own = typeof(Startup).Assembly;
                if (name == own.GetName().Name)
                {
                    return own;
                }
                string path;
                lock (Gate)
                {
                    if (!Paths.TryGetValue(name, out path))
                    {
                        return null;
                    }
                }
                return Assembly.LoadFrom(path);
            }
            catch (Exception)
            {
                return null;
            }
        }

        /// <summary>The names of the definitions whose handler is <paramref name="handler"/>.</summary>
        internal static string DefinitionsOf(Type handler)
        {
            lock (Gate)
            {
                string names;
                return Definitions.TryGetValue(handler.FullName ?? "", out names) ? names : "?";
            }
        }
    }

    /// <summary>Lines on stderr, each at most once.</summary>
    internal static class Log
    {
        private static readonly object Gate = new object();
        private static readonly Dictionary<string, bool> Said = new Dictionary<string, bool>();

        internal static void Line(string line)
        {
            lock (Gate)
            {
                if (Said.ContainsKey(line))
                {
                    return;
                }
                Said[line] = true;
            }
            try
            {
                Console.Error.WriteLine(line);
            }
            catch (Exception)
            {
            }
        }

        internal static void Missing(Type handler, string method, string shape)
        {
            Line("corprof: managed handler " + handler.FullName + " (definition " + Startup.DefinitionsOf(handler) + ") has no usable "
                + method + shape + "; the calls run without it");
        }

        internal static void Threw(Type handler, string method, Exception e)
        {
            Line("corprof: managed handler " + handler.FullName + " (definition " + Startup.DefinitionsOf(handler) + ") threw in "
                + method + ": " + e.GetType().FullName + "; the calls go on as written");
        }
    }

    /// <summary>Finds a handler's method for one instantiation.</summary>
    internal static class Binder
    {
        /// <summary>
        /// A delegate of <paramref name="delegateType"/> to the static method <paramref name="name"/>
        /// of <paramref name="handler"/> taking <paramref name="types"/> (by value or by
        /// reference, as the delegate says), its generic parameters inferred from the parameters
        /// that are one of them; null when there is none.
        /// </summary>
        internal static Delegate Bind(Type handler, string name, Type[] types, Type delegateType)
        {
            MethodInfo[] methods;
            try
            {
                methods = handler.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic);
            }
            catch (Exception)
            {
                return null;
            }
            foreach (var m in methods)
            {
                if (m.Name != name)
                {
                    continue;
                }
                try
                {
                    var parameters = m.GetParameters();
                    if (parameters.Length != types.Length)
                    {
                        continue;
                    }
                    var candidate = m;
                    if (m.IsGenericMethodDefinition)
                    {
                        var generic = m.GetGenericArguments();
                        var actual = new Type[generic.Length];
                        for (int g = 0; g < generic.Length && candidate != null; g++)
                        {
                            for (int p = 0; p < parameters.Length && actual[g] == null; p++)
                            {
                                var type = parameters[p].ParameterType;
                                if (type.IsByRef)
                                {
                                    type = type.GetElementType();
                                }
                                if (type == generic[g])
                                {
                                    actual[g] = types[p];
                                }
                            }
                            if (actual[g] == null)
                            {
                                candidate = null;
                            }
                        }
                        if (candidate == null)
                        {
                            continue;
                        }
                        candidate = m.MakeGenericMethod(actual);
                    }
                    var bound = Delegate.CreateDelegate(delegateType, candidate, false);
                    if (bound != null)
                    {
                        return bound;
                    }
                }
                catch (Exception)
                {
                    // A constraint the types break, say: not this one.
                }
            }
            return null;
        }
    }
}
