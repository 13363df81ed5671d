// The peer of il-bench (scripts/bench-il): the same dump, read and written with
// System.Reflection.Metadata, the .NET runtime's own metadata library (8.0.4's, in process).
//
//   IlPeer <dump>
//
// Bodies: MethodBodyBlock.Create reads the header and exception regions, every instruction is
// decoded (opcode, operand by the operand type System.Reflection.Emit.OpCodes gives), then the
// body is encoded again with InstructionEncoder + ControlFlowBuilder (branches and regions by
// label) + MethodBodyStreamEncoder. Signatures: SignatureDecoder with a provider building a
// small tree of objects (as corprof's decoder builds its Type values).
// Best of 7 passes after a warm-up; prints `key value` lines like il-bench.
using System;
using System.Collections.Generic;
using System.Collections.Immutable;
using System.Diagnostics;
using System.IO;
using System.Reflection.Emit;
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;

sealed class T
{
    public readonly object A, B;
    public T(object a, object b) { A = a; B = b; }
}

sealed class Provider : ISignatureTypeProvider<object, object>
{
    static readonly object Prim = new object();
    public object GetPrimitiveType(PrimitiveTypeCode c) { return Prim; }
    public object GetTypeFromDefinition(MetadataReader r, TypeDefinitionHandle h, byte k) { return new T(h, null); }
    public object GetTypeFromReference(MetadataReader r, TypeReferenceHandle h, byte k) { return new T(h, null); }
    public object GetTypeFromSpecification(MetadataReader r, object c, TypeSpecificationHandle h, byte k) { return new T(h, null); }
    public object GetSZArrayType(object e) { return new T(e, null); }
    public object GetArrayType(object e, ArrayShape s) { return new T(e, s); }
    public object GetByReferenceType(object e) { return new T(e, null); }
    public object GetPointerType(object e) { return new T(e, null); }
    public object GetPinnedType(object e) { return new T(e, null); }
    public object GetGenericInstantiation(object g, ImmutableArray<object> a) { return new T(g, a); }
    public object GetGenericTypeParameter(object c, int i) { return new T(i, null); }
    public object GetGenericMethodParameter(object c, int i) { return new T(i, null); }
    public object GetFunctionPointerType(MethodSignature<object> s) { return new T(s, null); }
    public object GetModifiedType(object m, object u, bool req) { return new T(m, u); }
}

static unsafe class IlPeer
{
    static readonly Dictionary<int, OperandType> Operands = new Dictionary<int, OperandType>();

    static int Main(string[] args)
    {
        foreach (var f in typeof(OpCodes).GetFields())
        {
            var op = (OpCode)f.GetValue(null);
            Operands[(ushort)op.Value] = op.OperandType;
        }
        byte[] dump = File.ReadAllBytes(args[0]);
        var bodies = new List<byte[]>();
        var sigs = new List<KeyValuePair<byte, byte[]>>();
        for (int pos = 0; pos < dump.Length;)
        {
            byte kind = dump[pos];
            int len = BitConverter.ToInt32(dump, pos + 1);
            var blob = new byte[len];
            Array.Copy(dump, pos + 5, blob, 0, len);
            pos += 5 + len;
            if (kind == 0) bodies.Add(blob); else sigs.Add(new KeyValuePair<byte, byte[]>(kind, blob));
        }
        long bodyBytes = 0;
        foreach (var b in bodies) bodyBytes += b.Length;

        double roundTrip = Best(() => { foreach (var b in bodies) RoundTrip(b, true); });
        double parse = Best(() => { foreach (var b in bodies) RoundTrip(b, false); });
        long before = GC.GetAllocatedBytesForCurrentThread();
        foreach (var b in bodies) RoundTrip(b, true);
        long bodyAlloc = GC.GetAllocatedBytesForCurrentThread() - before;
        var provider = new Provider();
        double sigDecode = Best(() => { foreach (var s in sigs) Decode(provider, s.Key, s.Value); });

        Console.WriteLine("bodies " + bodies.Count);
        Console.WriteLine("body_bytes " + bodyBytes);
        Console.WriteLine("round_trip_ms " + (roundTrip * 1e3).ToString("F2"));
        Console.WriteLine("round_trip_bodies_per_sec " + (bodies.Count / roundTrip).ToString("F0"));
        Console.WriteLine("round_trip_mb_per_sec " + (bodyBytes / roundTrip / 1e6).ToString("F1"));
        Console.WriteLine("parse_ms " + (parse * 1e3).ToString("F2"));
        Console.WriteLine("parse_bodies_per_sec " + (bodies.Count / parse).ToString("F0"));
        Console.WriteLine("parse_mb_per_sec " + (bodyBytes / parse / 1e6).ToString("F1"));
        Console.WriteLine("alloc_bytes_per_body " + (bodyAlloc / (double)bodies.Count).ToString("F0"));
        Console.WriteLine("signatures " + sigs.Count);
        Console.WriteLine("sig_decode_per_sec " + (sigs.Count / sigDecode).ToString("F0"));
        return 0;
    }

    static double Best(Action a)
    {
        a();
        double best = double.MaxValue;
        for (int i = 0; i < 7; i++)
        {
            var sw = Stopwatch.StartNew();
            a();
            best = Math.Min(best, sw.Elapsed.TotalSeconds);
        }
        return best;
    }

    static void Decode(Provider p, byte kind, byte[] blob)
    {
        fixed (byte* ptr = blob)
        {
            var r = new BlobReader(ptr, blob.Length);
            var d = new SignatureDecoder<object, object>(p, null, null);
            if (kind == 2) { d.DecodeType(ref r); return; }
            switch (blob[0] & 0x0f)
            {
                case 0x6: d.DecodeFieldSignature(ref r); break;
                case 0x7: d.DecodeLocalSignature(ref r); break;
                case 0xa: d.DecodeMethodSpecificationSignature(ref r); break;
                default: d.DecodeMethodSignature(ref r); break;
            }
        }
    }

    static int OperandSize(OperandType t, ref BlobReader r)
    {
        switch (t)
        {
            case OperandType.InlineNone: return 0;
            case OperandType.ShortInlineBrTarget: case OperandType.ShortInlineI: case OperandType.ShortInlineVar: return 1;
            case OperandType.InlineVar: return 2;
            case OperandType.InlineI8: case OperandType.InlineR: return 8;
            case OperandType.InlineSwitch: return -1;
            default: return 4;
        }
    }

    /// Decodes every instruction of the body; with `encode`, writes the body again.
    static void RoundTrip(byte[] bytes, bool encode)
    {
        fixed (byte* ptr = bytes)
        {
            var block = MethodBodyBlock.Create(new BlobReader(ptr, bytes.Length));
            var il = block.GetILReader();
            // Pass 1: decode; note branch targets.
            var targets = new HashSet<int>();
            var code = new List<long>(); // (offset << 32) | opcode, operand read again in pass 2
            while (il.RemainingBytes > 0)
            {
                int offset = il.Offset;
                int value = il.ReadByte();
                if (value == 0xfe) value = 0xfe00 | il.ReadByte();
                OperandType t = Operands[value];
                code.Add(((long)offset << 32) | (uint)value);
                if (t == OperandType.InlineSwitch)
                {
                    int n = il.ReadInt32();
                    int baseOffset = il.Offset + 4 * n;
                    for (int i = 0; i < n; i++) targets.Add(baseOffset + il.ReadInt32());
                }
                else if (t == OperandType.ShortInlineBrTarget) { int d = il.ReadSByte(); targets.Add(il.Offset + d); }
                else if (t == OperandType.InlineBrTarget) { int d = il.ReadInt32(); targets.Add(il.Offset + d); }
                else il.Offset += OperandSize(t, ref il);
            }
            if (!encode) return;
            var cfb = new ControlFlowBuilder();
            var enc = new InstructionEncoder(new BlobBuilder(), cfb);
            var labels = new Dictionary<int, LabelHandle>();
            Func<int, LabelHandle> label = o => { LabelHandle l; if (!labels.TryGetValue(o, out l)) { l = enc.DefineLabel(); labels[o] = l; } return l; };
            foreach (int o in targets) label(o);
            foreach (var region in block.ExceptionRegions)
            {
                var ts = label(region.TryOffset); var te = label(region.TryOffset + region.TryLength);
                var hs = label(region.HandlerOffset); var he = label(region.HandlerOffset + region.HandlerLength);
                switch (region.Kind)
                {
                    case ExceptionRegionKind.Catch: cfb.AddCatchRegion(ts, te, hs, he, region.CatchType); break;
                    case ExceptionRegionKind.Finally: cfb.AddFinallyRegion(ts, te, hs, he); break;
                    case ExceptionRegionKind.Fault: cfb.AddFaultRegion(ts, te, hs, he); break;
                    default: cfb.AddFilterRegion(ts, te, hs, he, label(region.FilterOffset)); break;
                }
            }
            il.Reset();
            foreach (long entry in code)
            {
                int offset = (int)(entry >> 32);
                int value = (int)(entry & 0xffffffff);
                LabelHandle here;
                if (labels.TryGetValue(offset, out here)) enc.MarkLabel(here);
                il.Offset = offset + (value > 0xff ? 2 : 1);
                OperandType t = Operands[value];
                var op = (ILOpCode)value;
                if (t == OperandType.InlineSwitch)
                {
                    int n = il.ReadInt32();
                    // No switch in 3.1's ControlFlowBuilder: the targets are copied as read (the
                    // layout does not change: every branch keeps its form).
                    enc.OpCode(op);
                    enc.CodeBuilder.WriteInt32(n);
                    for (int i = 0; i < n; i++) enc.CodeBuilder.WriteInt32(il.ReadInt32());
                }
                else if (t == OperandType.ShortInlineBrTarget) { int d = il.ReadSByte(); enc.Branch(op, labels[il.Offset + d]); }
                else if (t == OperandType.InlineBrTarget) { int d = il.ReadInt32(); enc.Branch(op, labels[il.Offset + d]); }
                else
                {
                    enc.OpCode(op);
                    int size = OperandSize(t, ref il);
                    if (size > 0) enc.CodeBuilder.WriteBytes(ptr + (il.StartPointer - ptr) + il.Offset, size);
                }
            }
            LabelHandle end;
            if (labels.TryGetValue(il.Length, out end)) enc.MarkLabel(end);
            var localSig = block.LocalSignature;
            var bodies = new MethodBodyStreamEncoder(new BlobBuilder());
            bodies.AddMethodBody(enc, block.MaxStack, localSig,
                block.LocalVariablesInitialized ? MethodBodyAttributes.InitLocals : MethodBodyAttributes.None);
        }
    }
}
