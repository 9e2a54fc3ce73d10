/* p4sim's v1model architecture declarations, written for p4sim from the documented
 * v1model API (BMv2 simple_switch). Declarations only: the v1model runtime of p4sim
 * implements what they do.
 *
 * It declares what p4c's p4include/v1model.p4 declares (release 1.2.4.0): the same
 * include guard (`_V1_MODEL_P4_`), the same V1MODEL_VERSION default (20180101) and the
 * same version conditionals, the same extern signatures. So a program that p4c rejects
 * for its v1model version (e.g. `counter<bit<32>>` without
 * `#define V1MODEL_VERSION 20200408` before the #include) p4sim rejects too.
 *
 * Versions: 20180101 (default): counter, direct_counter, meter, direct_meter take no index
 * type parameter (indices are bit<32>), register<T> has one; PortId_t is not declared.
 * 20200408 and later: counter<I>, meter<I>, register<T, I> (every type argument spelled
 * out, as p4c requires) and `typedef bit<9> PortId_t`. */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Additional match kinds of v1model. */
match_kind {
    range,
    optional,   /* exact or wildcard */
    selector    /* the keys an action selector hashes */
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#endif

/* Intrinsic metadata of every packet (BMv2's standard_metadata). */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t  ingress_port;
    PortId_t  egress_spec;      /* set in ingress: the output port (511 drops) */
    PortId_t  egress_port;      /* read-only in egress: the port being sent on */
#else
    bit<9>    ingress_port;
    bit<9>    egress_spec;
    bit<9>    egress_port;
#endif
    bit<32>   instance_type;    /* 0 normal, 1 ingress clone, 2 egress clone, 3 coalesced,
                                   4 recirculated, 5 replicated (multicast), 6 resubmitted */
    bit<32>   packet_length;
    /* queueing metadata, valid in egress */
    @alias("queueing_metadata.enq_timestamp") bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta") bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")    bit<19> deq_qdepth;
    /* intrinsic metadata */
    @alias("intrinsic_metadata.ingress_global_timestamp") bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")  bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")   bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid")  bit<16> egress_rid;
    bit<1>    checksum_error;   /* set by verify_checksum */
    error     parser_error;     /* the error the parser ended with */
    @alias("intrinsic_metadata.priority") bit<3> priority;  /* egress queue (0..7) */
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters, indexed by the data plane; an index >= size counts nothing. */
#if V1MODEL_VERSION >= 20200408
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

/* A counter with one cell per entry of the table that names it in `counters = ...`. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* The colours a meter writes. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of two-rate three-colour meters (RFC 2698); result: 0 green, 1 yellow, 2 red. */
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/* A meter with one cell per entry of the table that names it in `meters = ...`. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of cells of type T that the data plane reads and writes. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

/* Implementation of a table whose actions live in a shared profile. */
extern action_profile {
    action_profile(bit<32> size);
}

/* Writes a uniformly distributed value in [lo, hi] to result. */
extern void random<T>(out T result, in T lo, in T hi);

/* Sends `data` to the control plane as a digest. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* The old form without arguments (p4sim refuses it by name: it cannot reach the metadata). */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Drops the packet at the end of the current pipeline (sets egress_spec to 511). */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash of data) mod max. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Implementation of a table whose member is chosen by a hash over the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

/* The legacy one's-complement checksum object. */
@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* In VerifyChecksum: sets standard_metadata.checksum_error if condition holds and the
 * checksum of data differs from `checksum`. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* In ComputeChecksum: if condition holds, writes the checksum of data to `checksum`. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As above, with the packet payload (everything after the parsed headers) appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Ingress clone (I2E) or egress clone (E2E) to the mirroring session `session`. */
extern void clone(in CloneType type, in bit<32> session);

/* Deprecated forms that take the preserved fields as a struct. */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/* Preserve user metadata fields annotated @field_list(index) into the new packet. */
extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate_preserving_field_list(bit<8> index);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the packet to `length` bytes when it leaves. */
extern void truncate(in bit<32> length);

/* Checks that abort the program / constrain symbolic tools; BMv2 aborts on false. */
extern void assert(in bool check);
extern void assume(in bool check);

/* Logging to the switch log; `{}` in msg is replaced by the fields of data. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The programmable blocks of the v1model pipeline. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
