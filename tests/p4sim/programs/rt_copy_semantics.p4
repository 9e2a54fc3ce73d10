// Assignment copies headers, structs and stacks: changing the copy leaves the original; an `in` argument changed inside a function does not leak out
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct pair_t { h_t h; bit<8> x; }
struct headers { h_t h; e_t[2] st; }
struct M { bit<8> m; }
header h2_t { bit<8> a; }
bit<8> clobber(in h_t h) { h.b = 0x42; return h.a; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }

control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {

    apply {
        sm.egress_spec = 1;
        h_t c = hdr.h;
        c.a = 0x99;
        pair_t p = { hdr.h, 1 };
        pair_t q = p;
        q.h.b = 0x77;
        e_t[2] s2 = hdr.st;
        s2[0].v = 0x55;
        bit<8> r = clobber(hdr.h);
        hdr.h.b = p.h.b + r;
        hdr.st[1].v = s2[0].v;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
