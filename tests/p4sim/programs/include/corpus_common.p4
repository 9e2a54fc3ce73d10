// Shared declarations for include_local.p4 (an #include relative to the including file).
#ifndef CORPUS_COMMON_P4
#define CORPUS_COMMON_P4

header pair_h { bit<8> a; bit<8> b; }
struct headers_t { pair_h h; }
struct meta_t { }

#define OUT_PORT 4

#endif
