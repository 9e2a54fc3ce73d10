#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<32> a;
    bit<8>  s;
    int<16> n;
    bit<62> w62;
    bit<2>  pad;
    bit<64> w64;
    bit<48> m48;
}

header out_t {
    bit<64>  wide_shl;   // (bit<64>)a << 40: past 62 bits
    bit<32>  var_shl;    // a << s, s up to 255
    bit<32>  var_shr;    // a >> s
    int<16>  neg;        // n - 30000 (signed wrap)
    int<16>  sar;        // n >> 2 (arithmetic)
    bit<62>  mul62;      // w62 * 3 wraps at 62 bits
    bit<2>   pad;
    bit<128> cat;        // a ++ w64 ++ a: concatenation past 62 bits
    bit<8>   under;      // (bit<8>)(a - 5): negative intermediate
    bit<32>  quo;        // a / 3
    bit<32>  rem;        // a % 7
    bit<64>  sum64;      // w64 + w64 (bit<64> wraps)
    bit<48>  shl48;      // m48 << 20 wraps at 48
    bit<64>  mul64;      // (bit<64>)a * (bit<64>)a: a 64-bit product
    int<16>  sdiff;      // n - (int<16>)s * 300
    bit<8>   cmp;        // comparisons of wide and signed values
}

struct headers_t { in_t i; out_t o; }
struct meta_t { bit<62> acc; bit<64> acc64; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}

control V(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.o.setValid();
        h.o.wide_shl = ((bit<64>)h.i.a) << 40;
        h.o.var_shl = h.i.a << h.i.s;
        h.o.var_shr = h.i.a >> h.i.s;
        h.o.neg = h.i.n - 30000;
        h.o.sar = h.i.n >> 2;
        h.o.mul62 = h.i.w62 * 3;
        h.o.pad = 0;
        h.o.cat = h.i.a ++ h.i.w64 ++ h.i.a;
        h.o.under = (bit<8>)(h.i.a - 5);
        h.o.quo = h.i.a / 3;
        h.o.rem = h.i.a % 7;
        h.o.sum64 = h.i.w64 + h.i.w64;
        h.o.shl48 = h.i.m48 << 20;
        h.o.mul64 = ((bit<64>)h.i.a) * ((bit<64>)h.i.a);
        h.o.sdiff = h.i.n - ((int<16>)(bit<16>)h.i.s) * 300;
        m.acc = h.i.w62;
        m.acc = m.acc + m.acc + m.acc;
        m.acc64 = h.i.w64 |+| h.i.w64;
        bit<8> c = 0;
        if (h.i.n < 0) { c = c | 1; }
        if (h.i.w64 > 64w0x8000000000000000) { c = c | 2; }
        if (m.acc < h.i.w62) { c = c | 4; }
        if (m.acc64 == 64w0xffffffffffffffff) { c = c | 8; }
        if (h.i.n - 1 > h.i.n) { c = c | 16; }
        h.o.cmp = c;
        sm.egress_spec = 1;
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.i); pkt.emit(h.o); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
