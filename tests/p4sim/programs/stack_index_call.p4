// a call inside a run-time header-stack index: computed once, into a temporary, before the
// statement (p4c's SideEffectOrdering), the left-hand side's index before the right-hand
// side's effects; the statement is then guarded by that index (p4c's HSIndexSimplifier)
#include <core.p4>
#include <v1model.p4>

header c_t { bit<8> m; bit<8> i; bit<8> n; }
header s_t { bit<8> v; }
struct headers_t { c_t c; s_t[2] s; }

struct meta_t { bit<8> n; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.c);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

// every call counts itself in n: the output shows how often each ran
bit<8> pick(in bit<8> x, inout bit<8> n) {
    n = n + 1;
    return x;
}

bit<8> zap(inout bit<8> i, inout bit<8> n) {
    n = n + 1;
    i = 0;
    return 0x55;
}

void bump(inout bit<8> v) {
    v = v + 1;
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.c.m == 0) {
            hdr.s[pick(hdr.c.i, meta.n)].v = 0xAA;
        } else if (hdr.c.m == 1) {
            bump(hdr.s[pick(hdr.c.i, meta.n)].v);
        } else if (hdr.c.m == 2) {
            hdr.s[pick(hdr.c.i, meta.n)].v = zap(hdr.c.i, meta.n);
        } else if (hdr.c.m == 3) {
            hdr.s[pick(hdr.s[pick(hdr.c.i, meta.n)].v, meta.n)].v = 0x77;
        } else if (hdr.c.m == 4) {
            if (hdr.s[pick(hdr.c.i, meta.n)].v == 0x20) {
                hdr.c.m = 0x44;
            }
        }
        hdr.c.n = meta.n;
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.c); pkt.emit(hdr.s); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
