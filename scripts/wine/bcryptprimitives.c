/* Wine 8 (Debian 12) has no bcryptprimitives.dll, whose ProcessPrng Rust's standard library
 * imports on Windows (since Rust 1.78) for every random key it makes. This stand-in, built with
 * mingw and put in the Wine prefix only by scripts/wine-check.sh, answers it from advapi32's
 * RtlGenRandom (SystemFunction036), which Wine has. It never ships. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
