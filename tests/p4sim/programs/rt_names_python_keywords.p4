// Fields, locals, parameters, actions and tables named after Python keywords, builtins and
// p4sim internals: every P4 name is mangled in the generated code
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> class; bit<8> lambda; bit<8> None; bit<8> copy; bit<8> __init__;
    bit<8> __dict__; bit<8> self; bit<8> _ex; bit<8> _S; bit<8> _bits;
}
header v_t { bit<8> len; varbit<16> x; bit<8> x__w; }
struct headers { h_t h; v_t v; }
struct M { bit<8> True; bit<8> __class__; bit<8> _p4fields; bit<8> copy; }

parser P(packet_in buf, out headers off, inout M sm, inout standard_metadata_t meta) {
    state start {
        buf.extract(off.h);
        buf.extract(off.v, (bit<32>)off.h.lambda);
        transition accept;
    }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    bit<8> str = 1;
    action def(bit<8> None, bit<8> return_) {
        hdr.h.None = None;
        hdr.h.copy = return_;
    }
    table lambda {
        key = { hdr.h.class: exact @name("class"); }
        actions = { def; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        meta.True = hdr.h.self;
        meta.__class__ = hdr.h.__dict__;
        meta._p4fields = hdr.h._ex;
        lambda.apply();
        bit<8> e = meta.True + str;
        hdr.h.__init__ = e;
        hdr.h.__dict__ = meta._p4fields;
        hdr.h._ex = meta.__class__;
        meta.copy = 1;
        M m2 = meta;               // a struct copy of a struct with a field named copy
        hdr.h._S = hdr.h._S + 1 + m2.copy;
        hdr.h._bits = hdr.v.len;
        hdr.v.x__w = hdr.v.x__w + 1;
        h_t copy = hdr.h;          // a struct copy of a header with a field named copy
        copy.self = 0xAA;
        hdr.h = copy;
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.v); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
