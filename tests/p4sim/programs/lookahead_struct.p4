// lookahead<T>() of a struct (nested struct, bool, int<N>): fields read most significant first
// (p4c sample issue1768-bmv2); a short packet is PacketTooShort. Checked on p4c 1.2.5.16 + BMv2.
#include <core.p4>
#include <v1model.p4>

struct inner_t { bit<4> a; bool f; bit<3> b; }
struct la_t { bit<8> tag; inner_t inn; bit<12> c; int<4> s; }
header raw_t { bit<32> v; }
header out_t { int<4> s; bit<12> c; bit<3> b; bool f; bit<4> a; bit<8> tag; }
struct headers_t { raw_t raw; out_t o; }
struct meta_t { la_t la; bit<9> port; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        meta.la = pkt.lookahead<la_t>();
        transition select(pkt.lookahead<la_t>().inn.f) {
            true: one;
            false: two;
        }
    }
    state one { meta.port = 1; pkt.extract(hdr.raw); transition accept; }
    state two { meta.port = 2; pkt.extract(hdr.raw); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            sm.egress_spec = 3;
            return;
        }
        sm.egress_spec = meta.port;
        hdr.raw.setInvalid();
        hdr.o.setValid();
        hdr.o = { meta.la.s, meta.la.c, meta.la.inn.b, meta.la.inn.f, meta.la.inn.a, meta.la.tag };
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.raw); pkt.emit(hdr.o); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
