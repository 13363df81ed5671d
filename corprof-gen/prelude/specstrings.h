/* corprof prelude stand-in for specstrings.h. */
