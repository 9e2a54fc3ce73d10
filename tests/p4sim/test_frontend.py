"""p4sim front end: preprocessor, lexer, parser, located errors, arch declarations."""

from __future__ import annotations

import glob
import os
import time

import pytest

from p4sim.frontend import P4SourceError, P4SyntaxError, parse_program, parse_text
from p4sim.frontend import ast as A
from p4sim.frontend import preprocess as P
from p4sim.frontend.lexer import tokenize
from p4sim.frontend.preprocess import ARCH_DIR, preprocess_file, preprocess_text, render

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pp(text: str, **kw) -> str:
    """Preprocessed text, tokens joined by single spaces (one line)."""
    toks = preprocess_text(text, "t.p4", **kw).tokens
    return " ".join(t.value if t.kind == "string" else t.text for t in toks if t.kind != "eof")


def syntax_error(text: str, filename: str = "e.p4", **kw) -> P4SyntaxError:
    with pytest.raises(P4SyntaxError) as info:
        parse_text(text, filename, **kw)
    return info.value


def body_of(text: str) -> list[A.Statement]:
    """Statements of the apply block of a control holding `text`."""
    prog = parse_text(
        "#include <v1model.p4>\nheader h_t { bit<8> a; bit<16> b; }\nstruct s_t { h_t h; bit<8> x; }\n"
        "control C(inout s_t s) {\n apply {\n" + text + "\n }\n}\n",
        "b.p4",
    )
    ctl = prog.find(A.ControlDecl, "C")[0]
    return ctl.apply.statements


def rhs(expr_text: str) -> A.Expression:
    stmt = body_of(f"s.x = {expr_text};")[0]
    assert isinstance(stmt, A.Assignment)
    return stmt.rhs


def show(e: A.Node) -> str:
    """Fully parenthesized rendering of an expression (checks precedence)."""
    if isinstance(e, A.Binary):
        return f"({show(e.left)} {e.op} {show(e.right)})"
    if isinstance(e, A.Unary):
        return f"({e.op}{show(e.operand)})"
    if isinstance(e, A.Ternary):
        return f"({show(e.cond)} ? {show(e.then)} : {show(e.else_)})"
    if isinstance(e, A.IntLiteral):
        return e.text
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Member):
        return f"{show(e.expr)}.{e.member}"
    if isinstance(e, A.Slice):
        return f"{show(e.expr)}[{show(e.hi)}:{show(e.lo)}]"
    if isinstance(e, A.Index):
        return f"{show(e.expr)}[{show(e.index)}]"
    if isinstance(e, A.Cast):
        return f"(cast {show(e.type)} {show(e.expr)})"
    if isinstance(e, A.BitType):
        return f"bit<{show(e.width)}>"
    if isinstance(e, A.NamedType):
        return e.name
    if isinstance(e, A.MethodCall):
        targs = f"<{','.join(show(t) for t in e.type_args)}>" if e.type_args else ""
        return f"{show(e.callee)}{targs}({', '.join(show(a.value) for a in e.args)})"
    if isinstance(e, A.BoolLiteral):
        return str(e.value).lower()
    return type(e).__name__


# ====================================================================== lexer


@pytest.mark.parametrize(
    "text, value",
    [
        ("5", (5, None, False)),
        ("8w5", (5, 8, False)),
        ("16s3", (3, 16, True)),
        ("0x1F", (31, None, False)),
        ("0X1f", (31, None, False)),
        ("0b1010", (10, None, False)),
        ("0B1_0", (2, None, False)),
        ("0o17", (15, None, False)),
        ("0d99", (99, None, False)),
        ("32w0xFF_FF", (65535, 32, False)),
        ("8w0b1111_0000", (240, 8, False)),
        ("1_000", (1000, None, False)),
        ("4s0x7", (7, 4, True)),
    ],
)
def test_lexer_integer_literals(text, value):
    toks = tokenize(text, "l.p4")
    assert toks[0].kind == "int" and toks[0].value == value
    assert toks[1].kind == "eof"


@pytest.mark.parametrize("bad", ["8w0x", "0b102", "12abc", "0o8", "8q5"])
def test_lexer_malformed_integer_is_located(bad):
    with pytest.raises(P4SyntaxError) as info:
        tokenize(f"x = {bad};", "l.p4")
    assert (info.value.line, info.value.column) == (1, 5)
    assert "malformed integer literal" in info.value.reason


def test_lexer_strings_operators_and_positions():
    text = 'a /* one\ntwo */ b // c\n  "q\\"x\\n" &&& |+| |-| .. ++ >> <= >= != @ {#}'
    toks = tokenize(text, "l.p4")
    kinds = [(t.kind, t.text) for t in toks]
    assert kinds[:3] == [("ident", "a"), ("ident", "b"), ("string", 'q"x\n')]
    ops = [t.text for t in toks[3:-1]]
    # `>` is never joined: the parser decides between shift and closing type arguments
    assert ops == ["&&&", "|+|", "|-|", "..", "++", ">", ">", "<=", ">=", "!=", "@", "{", "#", "}"]
    b = toks[1]
    assert (b.span.line, b.span.column) == (2, 8)
    s = toks[2]
    assert (s.span.line, s.span.column) == (3, 3)
    gt1, gt2 = toks[8], toks[9]
    assert gt1.space_before and not gt2.space_before


def test_lexer_errors():
    with pytest.raises(P4SyntaxError, match="unterminated comment") as info:
        tokenize("a\n  /* never closed", "l.p4")
    assert (info.value.line, info.value.column) == (2, 3)
    with pytest.raises(P4SyntaxError, match="unexpected character '\\$'"):
        tokenize("a $ b", "l.p4")
    with pytest.raises(P4SyntaxError, match="unterminated string"):
        tokenize('x = "abc', "l.p4")


def test_lexer_directive_tokens_with_continuation():
    toks = tokenize("#define A(x) \\\n  (x + 1)\nb", "l.p4")
    d = toks[0]
    assert d.kind == "directive"
    name, body, raw = d.value
    assert name == "define"
    assert [t.text for t in body] == ["A", "(", "x", ")", "(", "x", "+", "1", ")"]
    assert toks[1].text == "b" and toks[1].span.line == 3


# ====================================================================== preprocessor


def test_object_and_function_macros():
    assert (
        pp("#define N 8\n#define ADD(a, b) ((a) + (b))\nx = ADD(N, 2);")
        == "x = ( ( 8 ) + ( 2 ) ) ;"
    )
    # nested calls, arguments with commas inside parentheses, self-reference is not expanded
    assert (
        pp("#define F(a) [a]\n#define G(a, b) F(a) F(b)\nG((1, 2), F(3))")
        == "[ ( 1 , 2 ) ] [ [ 3 ] ]"
    )
    assert pp("#define X X + 1\nX") == "X + 1"
    # a function-like macro name without a call is left alone
    assert pp("#define F(a) a\nF;") == "F ;"
    # '(' separated by a space makes an object-like macro
    assert pp("#define O (a)\nO") == "( a )"


def test_stringize_paste_variadic():
    assert pp("#define S(x) #x\nS(hello  world)") == '"hello world"'
    toks = preprocess_text("#define S(x) #x\nS(a)", "t.p4").tokens
    assert toks[0].kind == "string" and toks[0].text == "a"
    assert pp("#define CAT(a, b) a ## b\nCAT(my, var) CAT(1, 2)") == "myvar 12"
    assert pp("#define V(a, ...) a: __VA_ARGS__\nV(1, 2, 3)") == "1 : 2 , 3"


def test_line_and_file_builtins():
    toks = preprocess_text("\n#define L __LINE__\nx = L; f = __FILE__;", "t.p4").tokens
    assert toks[2].value == (3, None, False)
    assert toks[6].kind == "string" and toks[6].text == "t.p4"


def test_undef_and_command_line_defines():
    assert pp("#define A 1\n#undef A\nA") == "A"
    assert pp("A B", defines={"A": "7", "B": ""}) == "7"


@pytest.mark.parametrize(
    "cond, taken",
    [
        ("1", True),
        ("0", False),
        ("2 + 3 * 4 == 14", True),
        ("(2 + 3) * 4 == 14", False),
        ("(1 << 4) > 15 && !0", True),
        ("7 / 2 == 3", True),
        ("-7 / 2 == -3", True),
        ("7 % 3 == 1", True),
        ("1 ? 0 : 1", False),
        ("~0 == -1", True),
        ("0x10 == 16", True),
        ("defined(N)", True),
        ("defined N && N > 4", True),
        ("!defined(M)", True),
        ("UNDEFINED_NAME", False),
        ("N >= 8 || 1 / 0", True),
        ("5 & 3 | 8 ^ 1", True),
    ],
)
def test_if_expressions(cond, taken):
    out = pp(f"#define N 8\n#if {cond}\nyes\n#else\nno\n#endif")
    assert out == ("yes" if taken else "no")


def test_conditional_chains_and_nesting():
    src = """#define V 2
#if V == 1
one
#elif V == 2
two
#  if 0
hidden
#  else
inner
#  endif
#elif V == 2
dup
#else
other
#endif
#ifdef V
d
#endif
#ifndef V
nd
#endif
#if 0
#error not reached
#include "not_reached.p4"
#endif
"""
    assert pp(src) == "two inner d"


def test_preprocessor_errors_are_located(tmp_path):
    e = syntax_error("#if 1\nconst bit<8> x = 1;\n")
    assert "unterminated #if" in e.reason and e.line == 1
    e = syntax_error("a\n#endif\n")
    assert (e.line, e.column, e.reason) == (2, 1, "#endif without #if")
    e = syntax_error("\n\n  #error too old\n")
    assert (e.line, e.column) == (3, 3) and e.reason == "#error too old"
    e = syntax_error("#frobnicate\n")
    assert "unknown preprocessor directive '#frobnicate'" in e.reason
    e = syntax_error("#define F(a) a\nconst bit<8> x = F(1, 2);")
    assert (e.line, e.column) == (2, 18) and "expects 1 argument(s), got 2" in e.reason
    e = syntax_error("#if 1 +\n#endif")
    assert e.line == 1 and "#if" in e.reason
    e = syntax_error("#else\n")
    assert e.reason == "#else without #if"


def test_includes_quote_angle_include_dirs_and_errors(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "consts.p4").write_text("#pragma once\nconst bit<8> FROM_INC = 1;\n")
    (tmp_path / "local.p4").write_text('#include "consts.p4"\nconst bit<8> LOCAL = 2;\n')
    main = tmp_path / "main.p4"
    main.write_text(
        '#include <core.p4>\n#include "local.p4"\n#include <consts.p4>\n'
        "const bit<8> MAIN = FROM_INC;\n"
    )
    prog = parse_program(str(main), include_dirs=[str(inc)])
    names = [d.name for d in prog.find(A.ConstDecl)]
    assert names == ["FROM_INC", "LOCAL", "MAIN"]  # pragma once: included once
    assert prog.files[0] == str(main)
    assert os.path.join(ARCH_DIR, "core.p4") in prog.files
    const = prog.find(A.ConstDecl, "FROM_INC")[0]
    assert const.span.file == str(inc / "consts.p4") and const.span.line == 2

    # without the include dir: error at the #include line of local.p4
    with pytest.raises(P4SyntaxError) as info:
        parse_program(str(main))
    e = info.value
    assert e.file == str(tmp_path / "local.p4") and (e.line, e.column) == (
        1,
        10,
    )  # at the file name, as cpp
    assert "cannot find include file 'consts.p4'" in e.reason

    (tmp_path / "loop.p4").write_text('#include "loop.p4"\n')
    with pytest.raises(P4SyntaxError, match="nested more than"):
        parse_program(str(tmp_path / "loop.p4"))
    with pytest.raises(P4SyntaxError, match="cannot open source file"):
        parse_program(str(tmp_path / "missing.p4"))
    e = syntax_error("#include nope\n")
    assert "expects" in e.reason


def test_spans_follow_origin_through_macros_and_line(tmp_path):
    src = "#define BAD(x) (x +)\n\nconst bit<8> y = BAD(1);\n"
    e = syntax_error(src)
    # the error is inside the expansion: reported at the macro's use
    assert (e.line, e.column) == (3, 18)
    e = syntax_error('#line 100 "orig.p4"\nconst bit<8> z = ;\n')
    assert (e.file, e.line, e.column) == ("orig.p4", 100, 18)
    res = preprocess_text("#define TWO \\\n  2\nx = TWO;", "t.p4")
    assert [t.span.line for t in res.tokens[:-1]] == [3, 3, 3, 3]


def test_render_for_emit():
    res = preprocess_text("#define A 1\nx = A;\ny = 2;\n", "t.p4")
    assert render(res.tokens) == "x = 1 ;\ny = 2 ;\n"


# ====================================================================== parser: expressions


@pytest.mark.parametrize(
    "text, shape",
    [
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("s.x & 0xF == 3", "((s.x & 0xF) == 3)"),  # p4c: bitwise binds tighter than ==
        ("s.x | 1 ^ 2 & 3", "(s.x | (1 ^ (2 & 3)))"),
        ("s.x << 2 + 1", "(s.x << (2 + 1))"),
        ("s.x >> 1 >> 2", "((s.x >> 1) >> 2)"),
        ("s.x ++ 4w0 |+| 1", "((s.x ++ 4w0) |+| 1)"),
        ("s.x |-| 1 * 2", "(s.x |-| (1 * 2))"),
        ("s.x < 3 && s.x > 1 || !true", "(((s.x < 3) && (s.x > 1)) || (!true))"),
        ("s.x == 1 ? 2 : s.x == 2 ? 3 : 4", "((s.x == 1) ? 2 : ((s.x == 2) ? 3 : 4))"),
        ("-s.x % 3", "((-s.x) % 3)"),
        ("~s.x[3:0]", "(~s.x[3:0])"),
        ("(bit<8>) s.h.b[15:8]", "(cast bit<8> s.h.b[15:8])"),
        ("(bit<8>) s.h.b + 1", "((cast bit<8> s.h.b) + 1)"),
        ("(s.x) - 1", "(s.x - 1)"),
        ("(h_t) s.x", "(cast h_t s.x)"),
        ("s.x >= 1", "(s.x >= 1)"),
        ("s.h.a[7:4] != 0", "(s.h.a[7:4] != 0)"),
    ],
)
def test_expression_precedence(text, shape):
    assert show(rhs(text)) == shape


def test_generic_calls_versus_comparison():
    e = rhs("f<bit<8>>(s.x)")
    assert show(e) == "f<bit<8>>(s.x)"
    e = rhs("pkt.lookahead<bit<16>>()[15:8]")
    assert isinstance(e, A.Slice) and show(e.expr) == "pkt.lookahead<bit<16>>()"
    e = rhs("s.x < 3")
    assert show(e) == "(s.x < 3)"
    e = rhs("s.x < s.x")
    assert show(e) == "(s.x < s.x)"


def test_literals_lists_structs_and_special_expressions():
    e = rhs("{1, s.x, {2}}")
    assert isinstance(e, A.ListExpression) and len(e.elements) == 3
    e = rhs("{a = 1, b = 2}")
    assert isinstance(e, A.StructExpression) and [f.name for f in e.fields] == ["a", "b"]
    assert isinstance(rhs("{#}"), A.InvalidExpression)
    assert isinstance(rhs("{}"), A.ListExpression)
    e = rhs("error.NoError")
    assert isinstance(e, A.Member) and isinstance(e.expr, A.TypeRef)
    assert isinstance(e.expr.type, A.ErrorType) and e.member == "NoError"
    e = rhs('"str"')
    assert isinstance(e, A.StringLiteral) and e.value == "str"
    e = rhs(".top")
    assert isinstance(e, A.Name) and e.top_level
    e = rhs("8w255")
    assert (e.value, e.width, e.signed) == (255, 8, False)
    e = rhs("-8s1")
    assert isinstance(e, A.Unary) and e.operand.signed
    call = rhs("f(a = 1, b = _)")
    assert [a.name for a in call.args] == ["a", "b"]
    assert isinstance(call.args[1].value, A.DontCare)
    e = rhs("s.h.stack[2].a")
    assert show(e) == "s.h.stack[2].a"


# ====================================================================== parser: statements


def test_statements():
    stmts = body_of("""
        bit<8> v = 1;
        bit<8> w;
        const bit<8> K = 3;
        h_t hh;
        h_t[2] st;
        tuple<bit<8>, bool> tp;
        Checksum16() ck;
        s.x = v;
        s.h.setValid();
        s.x += 2; s.x >>= 1; s.x <<= 1;
        if (s.x == 1) s.x = 2; else if (s.x == 3) { s.x = 4; } else { exit; }
        { ; }
        switch (s.x) { 1: 2: { s.x = 3; } default: { return; } }
        @atomic { s.x = 1; }
        for (bit<8> i = 0; i < 4; i = i + 1) { s.x = i; }
    """)
    kinds = [type(s).__name__ for s in stmts]
    assert kinds == [
        "VariableDecl",
        "VariableDecl",
        "ConstDecl",
        "VariableDecl",
        "VariableDecl",
        "VariableDecl",
        "Instantiation",
        "Assignment",
        "MethodCallStatement",
        "Assignment",
        "Assignment",
        "Assignment",
        "IfStatement",
        "BlockStatement",
        "SwitchStatement",
        "BlockStatement",
        "ForStatement",
    ]
    assert isinstance(stmts[4].type, A.StackType)
    assert isinstance(stmts[5].type, A.TupleType)
    plus = stmts[9]
    assert show(plus.rhs) == "(s.x + 2)"
    assert show(stmts[10].rhs) == "(s.x >> 1)"
    assert show(stmts[11].rhs) == "(s.x << 1)"
    if_ = stmts[12]
    assert isinstance(if_.else_, A.IfStatement) and isinstance(if_.else_.else_, A.BlockStatement)
    sw = stmts[14]
    assert [c.body is None for c in sw.cases] == [True, False, False]
    assert isinstance(sw.cases[2].label, A.DefaultKeyset)
    assert stmts[15].annotations[0].name == "atomic"
    loop = stmts[16]  # P4_16 1.2.4 for loop
    assert [type(x).__name__ for x in loop.init] == ["VariableDecl"] and show(
        loop.cond
    ) == "(i < 4)"
    assert [type(x).__name__ for x in loop.update] == ["Assignment"] and loop.span.line == 21


FULL = r"""
#include <core.p4>
#include <v1model.p4>
const bit<16> TYPE_IPV4 = 0x0800;
typedef bit<48> mac_t;
type bit<32> ip_t;
enum bit<8> Color { RED = 1, GREEN = 2 }
enum Dir { IN, OUT }
error { MyError }
match_kind { my_kind }
@controller_header("packet_in")
header packet_in_h { bit<9> ingress_port; bit<7> _pad; }
header eth_h { mac_t dst; mac_t src; bit<16> etype; }
header_union u_t { eth_h a; eth_h b; }
struct meta_t { @field_list(1, 2) bit<8> x; bool flag; }
struct headers_t { packet_in_h pin; eth_h eth; eth_h[3] stack; }
struct G<T> { T f; }
extern MyExt<T> { MyExt(bit<32> n); T get<U>(in U x); abstract void cb(); }
extern void my_fn<T>(in T x, @optional in bit<8> y);
bit<8> add1(in bit<8> x) { return x + 1; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) vs;
    bit<8> tmp = 0;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype, tmp) {
            (TYPE_IPV4, 8w0x45 &&& 0xF0): next;
            (0x86dd, _): accept;
            (vs, 1 .. 5): reject;
            default: accept;
        }
    }
    @name("nxt") state next { transition accept; }
}
control C(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm)(bit<8> ctor) {
    counter(32w1024, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets) dc;
    register<bit<32>>(16) r;
    MyExt<bit<8>>(1) e = { void cb() { } };
    @name(".drop") action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port, @name("mac") mac_t dmac) { sm.egress_spec = port; }
    table t {
        key = { hdr.eth.dst : exact @name("dst"); m.x : ternary; sm.ingress_port : range; }
        actions = { fwd; @defaultonly drop; @tableonly NoAction; }
        const default_action = drop();
        size = 1024;
        counters = dc;
        @my_custom(1, 2) support_timeout = true;
        const entries = {
            (1, 0x0a &&& 0xff, 1 .. 3) : fwd(1, 2);
            priority = 10 : (2, _, default) : drop() @note;
        }
    }
    apply {
        switch (t.apply().action_run) {
            fwd: { c.count(0); }
            drop:
            default: { exit; }
        }
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
control N(inout headers_t hdr, inout meta_t m) { apply { } }
V1Switch(P(), N(), C(1), C(2), N(), D()) main;
"""


def test_every_declaration_kind():
    prog = parse_text(FULL, "full.p4")
    top = [d for d in prog.declarations if d.span.file == "full.p4"]
    kinds = [type(d).__name__ for d in top]
    assert kinds == [
        "ConstDecl",
        "TypedefDecl",
        "NewTypeDecl",
        "EnumDecl",
        "EnumDecl",
        "ErrorDecl",
        "MatchKindDecl",
        "HeaderDecl",
        "HeaderDecl",
        "HeaderUnionDecl",
        "StructDecl",
        "StructDecl",
        "StructDecl",
        "ExternDecl",
        "ExternFunctionDecl",
        "FunctionDecl",
        "ParserDecl",
        "ControlDecl",
        "ControlDecl",
        "ControlDecl",
        "Instantiation",
    ]
    color, dir_ = top[3], top[4]
    assert isinstance(color.underlying, A.BitType) and [m.name for m in color.members] == [
        "RED",
        "GREEN",
    ]
    assert color.members[1].value.value == 2 and dir_.underlying is None
    pin = top[7]
    ann = pin.annotation("controller_header")
    assert ann.string_value() == "packet_in" and ann.text() == '@controller_header("packet_in")'
    meta = top[10]
    assert [e.value for e in meta.fields[0].annotation("field_list").exprs] == [1, 2]
    assert top[12].type_params[0].name == "T"
    ext = top[13]
    assert [(m.name, m.is_constructor, m.is_abstract) for m in ext.methods] == [
        ("MyExt", True, False),
        ("get", False, False),
        ("cb", False, True),
    ]
    assert isinstance(ext.methods[1].return_type, A.NamedType)
    fn = top[14]
    assert fn.name == "my_fn" and fn.proto.params[1].annotations[0].name == "optional"

    parser = top[16]
    assert [type(d).__name__ for d in parser.locals] == ["ValueSetDecl", "VariableDecl"]
    start, nxt = parser.states
    assert nxt.annotation("name").string_value() == "nxt"
    sel = start.transition.target
    assert isinstance(sel, A.SelectExpression) and len(sel.exprs) == 2
    k0, k1, k2, k3 = (c.keyset for c in sel.cases)
    assert isinstance(k0, A.TupleKeyset) and isinstance(k0.elements[1], A.MaskKeyset)
    assert isinstance(k1.elements[1], A.DontCare)
    assert isinstance(k2.elements[0], A.Name) and isinstance(k2.elements[1], A.RangeKeyset)
    assert isinstance(k3, A.DefaultKeyset)
    assert isinstance(nxt.transition.target, A.Name) and nxt.transition.target.name == "accept"

    ctl = top[17]
    assert [p.name for p in ctl.ctor_params] == ["ctor"]
    kinds = [type(d).__name__ for d in ctl.locals]
    assert kinds == [
        "Instantiation",
        "Instantiation",
        "Instantiation",
        "Instantiation",
        "ActionDecl",
        "ActionDecl",
        "TableDecl",
    ]
    reg = ctl.locals[2]
    assert isinstance(reg.type, A.SpecializedType) and reg.type.base.name == "register"
    assert isinstance(ctl.locals[3].initializer[0], A.FunctionDecl)
    fwd = ctl.locals[5]
    assert fwd.params[1].annotation("name").string_value() == "mac"
    t = ctl.locals[6]
    assert [(k.match_kind, k.annotation("name") is not None) for k in t.keys] == [
        ("exact", True),
        ("ternary", False),
        ("range", False),
    ]
    assert [(a.name.name, [x.name for x in a.annotations]) for a in t.actions] == [
        ("fwd", []),
        ("drop", ["defaultonly"]),
        ("NoAction", ["tableonly"]),
    ]
    da = t.default_action
    assert da.is_const and isinstance(da.value, A.MethodCall) and da.value.callee.name == "drop"
    assert t.prop("size").value.value == 1024 and t.prop("counters").value.name == "dc"
    custom = t.prop("support_timeout")
    assert custom.annotation("my_custom") is not None and custom.value.value is True
    e0, e1 = t.entries
    assert t.prop("entries").is_const and e0.is_const and e0.priority is None
    assert isinstance(e0.keyset, A.TupleKeyset) and len(e0.keyset.elements) == 3
    assert e0.action.callee.name == "fwd" and [a.value.value for a in e0.action.args] == [1, 2]
    assert e1.priority.value == 10 and e1.annotation("note") is not None
    assert isinstance(e1.keyset.elements[2], A.DefaultKeyset)
    sw = ctl.apply.statements[0]
    assert isinstance(sw, A.SwitchStatement) and sw.expr.member == "action_run"
    assert [c.label.name if isinstance(c.label, A.Name) else "default" for c in sw.cases] == [
        "fwd",
        "drop",
        "default",
    ]
    main = top[-1]
    assert main.name == "main" and main.type.name == "V1Switch" and len(main.args) == 6
    assert isinstance(main.args[2].value, A.MethodCall)


def test_spans_on_nodes():
    prog = parse_text(FULL, "full.p4")
    ctl = prog.find(A.ControlDecl, "C")[0]
    assert (ctl.span.file, ctl.span.line, ctl.span.column) == ("full.p4", 35, 1)
    t = ctl.locals[6]
    assert (t.span.line, t.span.column) == (42, 5)
    key = t.keys[1]
    assert (key.span.line, key.span.column) == (43, 51)
    assert (key.match_kind_span.line, key.match_kind_span.column) == (43, 57)
    # every node of the program has a real span
    for node in A.walk(prog):
        assert node.span.line > 0, node


def test_annotation_bodies():
    prog = parse_text(
        '@id(5) @name("a.b") @pkginfo(name = "x", version = "1") @hidden '
        "@weird(+ ) @s[a = 1] const bit<8> A = 1;",
        "a.p4",
    )
    c = prog.declarations[0]
    names = [a.name for a in c.annotations]
    assert names == ["id", "name", "pkginfo", "hidden", "weird", "s"]
    assert c.annotation("id").int_value() == 5
    assert c.annotation("name").string_value() == "a.b"
    assert set(c.annotation("pkginfo").kv) == {"name", "version"}
    assert c.annotation("hidden").text() == "@hidden"
    weird = c.annotation("weird")
    assert weird.exprs is None and [t.text for t in weird.body] == ["+"]  # kept raw
    assert c.annotation("s").structured


# ====================================================================== parser errors


@pytest.mark.parametrize(
    "src, line, col, reason",
    [
        ("header h { bit<8> x }", 1, 21, "expected ';' but found '}'"),
        ("control C() { apply { x = ; } }", 1, 27, "expected an expression but found ';'"),
        ("struct s { bit<8> x; ", 1, 22, "expected a type but found end of file"),
        ("control C() {\n  apply {\n    x = 1\n  }\n}", 4, 3, "expected ';' but found '}'"),
        (
            "parser P() { state s { transition accept; x = 1; } }",
            1,
            43,
            "the transition must be the last statement of a state",
        ),
        ("control C() { }", 1, 15, "control 'C' has no apply block"),
        (
            "control C() { apply { x + 1; } }",
            1,
            28,
            "expected '=' or a call in this statement but found ';'",
        ),
        ("const bit<8> = 1;", 1, 14, "expected a name but found '='"),
        ("foo bar;", 1, 1, "expected a declaration but found 'foo'"),
        (
            "control C() { table t { key = { a : exact } } apply {} }",
            1,
            43,
            "expected ';' but found '}'",
        ),
        ("bit<8> f(in bit<8> x) { return x; ", 1, 35, "expected '}' but found end of file"),
        ("const bit<8> x = (1 + 2;", 1, 24, "expected ')' but found ';'"),
        (
            "control C() { apply { f(1 2); } }",
            1,
            27,
            "expected ',' or ')' in the argument list but found '2'",
        ),
        ('@name("x" const bit<8> x = 1;', 1, 6, "unterminated annotation body of @name"),
    ],
)
def test_syntax_errors_are_located(src, line, col, reason):
    e = syntax_error(src)
    assert (e.file, e.line, e.column, e.reason) == ("e.p4", line, col, reason)


def test_error_rendering_shows_line_and_caret(tmp_path):
    f = tmp_path / "bad.p4"
    f.write_text("control C() {\n  apply {\n\tx = 3 +;\n  }\n}\n")
    with pytest.raises(P4SourceError) as info:
        parse_program(str(f))
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == f"{f}:3:9: error: expected an expression but found ';'"
    assert lines[1] == "     x = 3 +;"
    assert lines[2] == "            ^"
    assert info.value.headline() == lines[0]


# ====================================================================== arch and real programs

V1MODEL_NAMES = {
    A.ExternDecl: [
        "packet_in",
        "packet_out",
        "counter",
        "direct_counter",
        "meter",
        "direct_meter",
        "register",
        "action_profile",
        "action_selector",
        "Checksum16",
    ],
    A.ExternFunctionDecl: [
        "verify",
        "random",
        "digest",
        "mark_to_drop",
        "hash",
        "verify_checksum",
        "update_checksum",
        "verify_checksum_with_payload",
        "update_checksum_with_payload",
        "clone",
        "clone3",
        "resubmit",
        "recirculate",
        "clone_preserving_field_list",
        "resubmit_preserving_field_list",
        "recirculate_preserving_field_list",
        "truncate",
        "assert",
        "assume",
        "log_msg",
    ],
    A.EnumDecl: ["CounterType", "MeterType", "HashAlgorithm", "CloneType"],
    A.ParserTypeDecl: ["Parser"],
    A.ControlTypeDecl: ["VerifyChecksum", "Ingress", "Egress", "ComputeChecksum", "Deparser"],
    A.PackageTypeDecl: ["V1Switch"],
    A.ActionDecl: ["NoAction"],
    A.StructDecl: ["standard_metadata_t"],
}


def test_arch_declares_v1model_api():
    prog = parse_program(os.path.join(ARCH_DIR, "v1model.p4"))
    for cls, names in V1MODEL_NAMES.items():
        have = {d.name for d in prog.find(cls)}
        assert set(names) <= have, (cls.__name__, set(names) - have)
    errors = [m.name for d in prog.find(A.ErrorDecl) for m in d.members]
    assert errors == [
        "NoError",
        "PacketTooShort",
        "NoMatch",
        "StackOutOfBounds",
        "HeaderTooShort",
        "ParserTimeout",
        "ParserInvalidArgument",
    ]
    kinds = [m.name for d in prog.find(A.MatchKindDecl) for m in d.members]
    assert kinds == ["exact", "ternary", "lpm", "range", "optional", "selector"]
    sm = prog.find(A.StructDecl, "standard_metadata_t")[0]
    fields = {f.name for f in sm.fields}
    assert {
        "ingress_port",
        "egress_spec",
        "egress_port",
        "instance_type",
        "packet_length",
        "enq_timestamp",
        "enq_qdepth",
        "deq_timedelta",
        "deq_qdepth",
        "ingress_global_timestamp",
        "egress_global_timestamp",
        "mcast_grp",
        "egress_rid",
        "checksum_error",
        "parser_error",
        "priority",
    } <= fields
    v1 = prog.find(A.PackageTypeDecl, "V1Switch")[0]
    assert [p.name for p in v1.params] == ["p", "vr", "ig", "eg", "ck", "dep"]
    # the two log_msg overloads and two extract overloads
    assert len(prog.find(A.ExternFunctionDecl, "log_msg")) == 2
    pin = prog.find(A.ExternDecl, "packet_in")[0]
    assert [m.name for m in pin.methods].count("extract") == 2


def _programs() -> list[str]:
    found = glob.glob(os.path.join(ROOT, "p4src", "*.p4"))
    found += glob.glob(
        os.path.join(ROOT, "tests", "p4sim", "programs", "**", "*.p4"), recursive=True
    )
    # reject_*.p4 must fail to load (some of them at parse time): test_corpus checks them.
    return sorted(f for f in found if not os.path.basename(f).startswith("reject_"))


@pytest.mark.parametrize("path", _programs(), ids=lambda p: os.path.relpath(p, ROOT))
def test_project_programs_parse(path):
    prog = parse_program(path, include_dirs=[os.path.join(ROOT, "p4src", "include")])
    own = [d for d in prog.declarations if d.span.file == os.path.abspath(path)]
    assert own, "no declarations parsed from the file itself"


def test_roce_switch_parses_fast():
    path = os.path.join(ROOT, "p4src", "roce_switch.p4")
    inc = [os.path.join(ROOT, "p4src", "include")]
    best = float("inf")
    for _ in range(3):
        P._lex_cache.clear()  # cold: lex every file again
        t0 = time.process_time()  # CPU time: other processes on the machine do not count
        prog = parse_program(path, include_dirs=inc)
        best = min(best, time.process_time() - t0)
    assert prog.find(A.Instantiation, "main")
    assert best < 0.5, f"cold parse of roce_switch.p4 took {best:.3f} s of CPU"


def test_preprocess_file_lists_every_file(tmp_path):
    f = tmp_path / "m.p4"
    f.write_text("#include <v1model.p4>\n")
    res = preprocess_file(str(f))
    assert [os.path.basename(p) for p in res.files] == ["m.p4", "v1model.p4", "core.p4"]


def test_quirks_real_programs_use():
    prog = parse_text(
        """#include <v1model.p4>
header h_t { bit<4> v; bit<4> ihl; }
struct H { h_t h; };
struct M { bit<16> len; }
typedef tuple<
    bit<4>,
    varbit<56>
    > myTuple1;
T max<T>(in T a, in T b) { return a > b ? a : b; }
parser P(packet_in pkt, out H hdr, inout M meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr = hdr.h);
        meta.len = (bit<16>)
                   (8 * (4 * (bit<9>) (pkt.lookahead<h_t >().ihl) - 20));
        transition accept;
    };
}
control C(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    action a(in bit<8> type) { };
    table t { key = { @name("k") meta.len : exact; } actions = { a(1); } default_action = a(1); }
    apply { @blockAnnotation { } }
};
control D(packet_out pkt, in H hdr) { apply { } }
control N(inout H hdr, inout M meta) { apply { } }
V1Switch<H, M>(p = P(), vr = N(), ig = C(), eg = C(), ck = N(), dep = D()) main;
""",
        "q.p4",
    )
    fn = prog.find(A.FunctionDecl, "max")[0]
    assert isinstance(fn.return_type, A.NamedType) and fn.type_params[0].name == "T"
    parser = prog.find(A.ParserDecl, "P")[0]
    extract, assign = parser.states[0].statements
    assert extract.call.args[0].name == "hdr"
    cast = assign.rhs
    assert isinstance(cast, A.Cast) and isinstance(cast.expr, A.Binary)
    look = cast.expr.right.left.right  # (bit<9>) (...)
    assert isinstance(look, A.Cast) and show(look.expr) == "pkt.lookahead<h_t>().ihl"
    ctl = prog.find(A.ControlDecl, "C")[0]
    assert ctl.locals[0].params[0].name == "type"
    assert ctl.locals[1].keys[0].annotation("name").string_value() == "k"
    assert ctl.locals[1].actions[0].args[0].value.value == 1
    main = prog.find(A.Instantiation, "main")[0]
    assert isinstance(main.type, A.SpecializedType) and [a.name for a in main.args] == [
        "p",
        "vr",
        "ig",
        "eg",
        "ck",
        "dep",
    ]
    assert isinstance(prog.find(A.TypedefDecl, "myTuple1")[0].type, A.TupleType)


def test_mangled_source_gives_located_errors_never_crashes():
    """Random edits of a full program: every failure is a P4SourceError with a position."""
    import random

    rng = random.Random(4791)
    alphabet = list('{}()[]<>;:,.=@#"/*\\\n 0x8w_a&|?-')
    for _ in range(100):
        chars = list(FULL)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(chars))
            if rng.random() < 0.5:
                del chars[pos : pos + rng.randint(1, 8)]
            else:
                chars.insert(pos, rng.choice(alphabet))
        try:
            parse_text("".join(chars), "fz.p4")
        except P4SourceError as e:
            assert e.line > 0 and e.column > 0, e.headline()
            assert str(e).startswith(f"fz.p4:{e.line}:{e.column}: error: ")


def test_deep_nesting_is_an_error_not_a_crash():
    e = syntax_error("const bit<8> x = " + "(" * 3000 + "1" + ")" * 3000 + ";")
    assert "nested too deeply" in e.reason and e.line == 1


def test_table_with_empty_parameter_list_is_accepted_with_a_warning(tmp_path):
    """`table t() { ... }` (draft P4_16, still taken by p4c with a deprecation warning)
    compiles to the same program as `table t { ... }`; parameters in it are refused."""
    from p4sim.lower import load_program
    from p4sim.p4info import p4info_from_model

    src = open(os.path.join(ROOT, "tests", "p4sim_runtime", "programs", "l2_cpu.p4")).read()
    assert "    table l2_fwd {" in src
    (tmp_path / "new").mkdir()
    (tmp_path / "draft").mkdir()
    old = tmp_path / "new" / "l2.p4"
    old.write_text(src)
    draft = tmp_path / "draft" / "l2.p4"
    draft.write_text(src.replace("    table l2_fwd {", "    table l2_fwd ( ) {"))
    a, b = load_program(str(old)), load_program(str(draft))
    assert a.program.warnings == []
    line = src[: src.index("    table l2_fwd {")].count("\n") + 1
    assert b.program.warnings == [
        f"{draft}:{line}:18: warning: table 'l2_fwd': the '()' after a table name "
        "is deprecated; write 'table l2_fwd {'"
    ]
    assert p4info_from_model(a.model) == p4info_from_model(b.model)
    assert a.python.replace(str(old), "P") == b.python.replace(
        str(draft), "P"
    )  # the same generated code
    err = syntax_error("control C() { table t(bit<8> x) { actions = {} } apply {} }", "tp.p4")
    assert "tables take no parameters" in str(err) and (err.span.line, err.span.column) == (1, 22)
