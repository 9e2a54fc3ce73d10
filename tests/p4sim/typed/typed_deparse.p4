#include <core.p4>
#include <v1model.p4>

// The typed deparser (p4sim.compiled.typed.typed_deparser): headers of C-valued fields are
// written as bytes into one buffer, the others keep struct.pack; their order must hold.
header a_t {
    bit<8>  x;
    bit<4>  hi;
    bit<4>  lo;
    bit<16> y;
    bit<48> mac;    // split into an I and an H word
    bit<64> w64;    // a Python int field: the 8-byte word read as unsigned long long
}
header s_t { int<16> n; bit<16> k; }  // signed: struct.pack kept
header e_t { bit<8> v; }              // a stack: emitted in a loop, struct.pack kept
header b_t { bit<32> q; bit<63> w63; bit<1> f; }  // a 64-bit chunk of two fields: pack kept

struct headers_t { a_t a; s_t s; e_t[3] st; b_t b; a_t a2; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.a);
        pkt.extract(h.s);
        pkt.extract(h.st[0]);
        pkt.extract(h.st[1]);
        pkt.extract(h.st[2]);
        pkt.extract(h.b);
        pkt.extract(h.a2);
        transition accept;
    }
}

control V(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.a.x = h.a.x + 200;
        h.a.y = h.a.y ^ 16w0x8001;
        h.a.mac = h.a.mac + 48w0xfedcba987654;
        h.a.w64 = h.a.w64 + 1;
        h.s.n = h.s.n - 1000;
        h.b.w63 = h.b.w63 + 5;
        if (h.a.lo == 1) { h.s.setInvalid(); }
        if (h.a.lo == 2) { h.st[1].setInvalid(); }
        if (h.a.lo == 3) { h.a.setInvalid(); }
        if (h.a.lo == 4) { h.a2.setInvalid(); h.b.setInvalid(); }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) {
    apply { pkt.emit(h.a); pkt.emit(h.s); pkt.emit(h.st); pkt.emit(h.b); pkt.emit(h.a2); }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
