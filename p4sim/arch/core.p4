/* p4sim's core library, written for p4sim from the P4_16 language specification
 * (section "P4 core library"). It declares what p4c's p4include/core.p4 declares (release
 * 1.2.4.0), under the same include guard, so programs that test `_CORE_P4_` see the same
 * thing with both. Declarations only; p4sim implements their behaviour. */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors the parser runtime can signal (the spec's standard list). */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet a parser reads from. */
extern packet_in {
    /* Read a fixed-size header and advance past it. */
    void extract<T>(out T hdr);
    /* Read a header whose varbit field takes `variableFieldSizeInBits` bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Look at the next bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Length of the packet in bytes. */
    bit<32> length();
}

/* The packet a deparser writes. */
extern packet_out {
    /* Append a header (only if valid) or each element of a struct / stack. */
    void emit<T>(in T hdr);
}

/* Ends parsing with `toSignal` when `check` is false. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing (the usual default action). */
@noWarn("unused")
action NoAction() {}

/* Match kinds every architecture provides. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertions (spec section "Static assertions"): false stops compilation. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
