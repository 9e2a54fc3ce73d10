// push_front on a stack of header unions, a table keyed on a union member's field, an action
// parameter default value, a member of a function's struct result, switch on an enum result
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> a; }
header b_t { bit<8> b; }
header_union u_t { a_t a; b_t b; }
header t_t { bit<8> tag; bit<8> r; }
struct pt { bit<8> x; bit<8> y; }
struct headers { t_t t; u_t[2] us; u_t u; }
struct M { }
enum Dir { Up, Down }
pt mk(in bit<8> v) { return { v, v + 1 }; }
Dir dir(in bit<8> v) { if (v > 5) { return Dir.Up; } return Dir.Down; }
parser P(packet_in pkt, out headers hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.t); pkt.extract(hdr.us.next.a); pkt.extract(hdr.u.b); transition accept; }
}
control VC(inout headers hdr, inout M meta) { apply { } }
control I(inout headers hdr, inout M meta, inout standard_metadata_t sm) {
    action seta(bit<8> v = 3) { hdr.t.r = hdr.t.r + v; }
    table tu { key = { hdr.u.b.b: exact; } actions = { seta; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        hdr.t.r = mk(hdr.t.tag).y;
        switch (dir(hdr.t.tag)) { Dir.Up: { hdr.t.r = hdr.t.r + 0x10; } Dir.Down: { hdr.t.r = hdr.t.r + 0x20; } }
        hdr.us.push_front(1);
        log_msg("r = {}", {hdr.t.r});
        tu.apply();
        seta();
    }
}
control E(inout headers hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout M meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.t); pkt.emit(hdr.us); pkt.emit(hdr.u); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
