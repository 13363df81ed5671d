// The native library of tests/apps/RecordNative, built by corprof-record/tests/record_native.rs
// with cc (-O2 -fomit-frame-pointer) into a library with symbols and a stripped copy. Only the
// entry is exported; the two functions beneath it are local (named by .symtab alone, which
// strip removes) and keep no frame pointer: the outer one has a frame of its own (its array),
// the inner one is a leaf. A walk by RBP alone skips both between the leaf and the managed
// caller; a walk by the library's .eh_frame finds them.
#include <stdint.h>

__attribute__((noinline, noclone)) static uint64_t spin_inner(uint64_t x, uint64_t loops)
{
    for (uint64_t i = 0; i < loops; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

__attribute__((noinline, noclone)) static uint64_t spin_outer(uint64_t rounds)
{
    volatile uint64_t seen[16];
    uint64_t x = 1;
    for (uint64_t r = 0; r < rounds; r++) {
        x = spin_inner(x, 100000);
        seen[r % 16] = x;
    }
    return x + seen[0];
}

__attribute__((visibility("default"))) uint64_t corprof_spin_entry(uint64_t rounds)
{
    return spin_outer(rounds) + 1;
}
