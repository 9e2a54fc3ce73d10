# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled write path (Cython): `Rec` and the bulk single-exact-key insert/delete of
p4sim/runtime/tables.py, and the run -> values step of p4sim/server/fastwrite/builders.py.

Built and selected by p4sim/runtime/compiled_write.py. The pure-Python code in tables.py
and fastwrite/ is the reference: every function here leaves exactly the state and
returns exactly the result of its namesake there (tests/p4sim_runtime/test_compiled_write.py
runs the differential Write tests against this module and against planted slips in it).

Why it is faster: a Rec is a C struct made without an __init__ call, the loops run in C, and
the records a bulk insert makes stay out of the cyclic collector. A Rec whose every field is
atomic (an int, None, a str, or a tuple the collector has untracked) cannot be part of a
reference cycle, so it is untracked, as CPython untracks such tuples and dicts itself
(Objects/tupleobject.c _PyTuple_MaybeUntrack, Objects/dictobject.c MAINTAIN_TRACKING); every
field is written through a property that tracks the Rec again as soon as a field is given
an object that may be (`_track_for`). That is the one way in: nothing outside this module
writes a Rec's C fields.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_CheckExact
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_CheckExact
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy, memset

import heapq

cdef extern from "Python.h":
    PyObject* PyDict_SetDefault(object, object, object) except NULL  # (a borrowed reference)
    bint PyObject_IS_GC(object)
    bint PyObject_GC_IsTracked(object)
    void PyObject_GC_Track(object)
    void PyObject_GC_UnTrack(object)

FIELDS = ("entry", "aid", "args", "pkts", "bytes", "meter", "prio", "seq", "hnd", "tests", "mkey")

cdef extern from *:
    """
    /* The value of a non-negative exact int below 2**30 (one digit in CPython 3.11's
       layout, read in place: no call), else -1: the caller asks PyLong then. */
    static inline long long p4sim_small_int(PyObject* o) {
    #if PY_VERSION_HEX < 0x030C0000 && PYLONG_BITS_IN_DIGIT == 30
        if (PyLong_CheckExact(o)) {
            Py_ssize_t size = Py_SIZE(o);
            if (size == 0) return 0;
            if (size == 1) return (long long)((PyLongObject*)o)->ob_digit[0];
        }
    #endif
        return -1;
    }
    """
    long long p4sim_small_int(PyObject* o)
    long long PyLong_AsLongLongAndOverflow(PyObject* o, int* overflow) except? -1

cdef object _heappush = heapq.heappush


cdef bint _ascending(list xs) except -1:
    """Whether `xs` is in ascending order (sorted(xs) == xs), told from its items when each
    is an exact int that fits a C long long (a table's free handles); False otherwise,
    whatever the order (the caller then sorts, as the reference does)."""
    cdef Py_ssize_t i, m = len(xs)
    cdef long long prev = -1, cur
    cdef int overflow = 0
    cdef PyObject* o
    for i in range(m):
        o = PyList_GET_ITEM(xs, i)
        cur = p4sim_small_int(o)
        if cur < 0:
            if not PyLong_CheckExact(<object>o):
                return False
            cur = PyLong_AsLongLongAndOverflow(o, &overflow)
            if overflow or cur < 0:
                return False
        if cur < prev:
            return False
        prev = cur
    return True


cdef inline bint _may_be_tracked(object v):
    # CPython's _PyObject_GC_MAY_BE_TRACKED: a tuple only while it is tracked itself
    if not PyObject_IS_GC(v):
        return False
    if PyTuple_CheckExact(v):
        return PyObject_GC_IsTracked(v)
    return True


@cython.final
@cython.freelist(4096)  # (deleted Recs' memory kept for the next inserts: bounded)
cdef class Rec:
    """One installed entry (or the default action) as the data path sees it: the fields
    and the constructor of tables.py's pure-Python Rec."""

    cdef object _entry, _aid, _args, _pkts, _bytes, _meter, _prio, _seq, _hnd, _tests, _mkey
    # a bulk insert's Rec (one exact key) leaves `tests` to be made when first read: it is
    # ((0, mkey[0], _full),), what the reference stores (the data path never reads it)
    cdef object _full
    # and keeps its `seq` as a C integer (_seq_is_n), boxed when read (only listing the
    # entries in order reads it): no int object made per insert
    cdef long long _seqn
    cdef bint _seq_is_n

    def __init__(self, entry, aid, args, prio=0, tests=(), mkey=(), seq=0, hnd=0):
        self._entry = entry
        self._aid = aid
        self._args = args
        self._pkts = 0
        self._bytes = 0
        self._meter = None
        self._prio = prio
        self._seq = seq
        self._hnd = hnd
        self._tests = tests
        self._mkey = mkey
        if not (_may_be_tracked(entry) or _may_be_tracked(aid) or _may_be_tracked(args)
                or _may_be_tracked(prio) or _may_be_tracked(tests) or _may_be_tracked(mkey)
                or _may_be_tracked(seq) or _may_be_tracked(hnd)):
            PyObject_GC_UnTrack(self)

    cdef inline void _track_for(self, object v):
        if _may_be_tracked(v) and not PyObject_GC_IsTracked(self):
            PyObject_GC_Track(self)

    @property
    def entry(self):
        return self._entry

    @entry.setter
    def entry(self, v):
        self._track_for(v)
        self._entry = v

    @property
    def aid(self):
        return self._aid

    @aid.setter
    def aid(self, v):
        self._track_for(v)
        self._aid = v

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, v):
        self._track_for(v)
        self._args = v

    @property
    def pkts(self):
        return self._pkts

    @pkts.setter
    def pkts(self, v):
        self._track_for(v)
        self._pkts = v

    @property
    def bytes(self):
        return self._bytes

    @bytes.setter
    def bytes(self, v):
        self._track_for(v)
        self._bytes = v

    @property
    def meter(self):
        return self._meter

    @meter.setter
    def meter(self, v):
        self._track_for(v)
        self._meter = v

    @property
    def prio(self):
        return self._prio

    @prio.setter
    def prio(self, v):
        self._track_for(v)
        self._prio = v

    @property
    def seq(self):
        if self._seq_is_n:
            return self._seqn
        return self._seq

    @seq.setter
    def seq(self, v):
        self._track_for(v)
        self._seq = v
        self._seq_is_n = False

    @property
    def hnd(self):
        return self._hnd

    @hnd.setter
    def hnd(self, v):
        self._track_for(v)
        self._hnd = v

    @property
    def tests(self):
        if self._full is not None:
            self._tests = _atomic((_atomic((0, self._mkey[0], self._full)),))
            self._full = None
        return self._tests

    @tests.setter
    def tests(self, v):
        self._track_for(v)
        self._tests = v
        self._full = None

    @property
    def mkey(self):
        return self._mkey

    @mkey.setter
    def mkey(self, v):
        self._track_for(v)
        self._mkey = v


cdef inline tuple _atomic(tuple t):
    # a new tuple of ints (non-GC objects) never needs the collector: untracked at once
    PyObject_GC_UnTrack(t)
    return t


def insert_exact1_many(table, list vs, aid, list args):
    """tables.Table.insert_exact1_many: `insert_exact1_checked` of every (vs[j], aid,
    args[j]), in order, or nothing and False when one would fail.

    The reference's two checks (no key twice in `vs`, none already there: `set(vs)` and
    `isdisjoint`) are made by the insert itself, in one pass: each Rec goes into `exact1`
    with setdefault, which finds a key already there or given earlier in this run; then
    the keys this call put in are taken out again (deleting the last keys of a dict
    leaves the others and their order as they were) and nothing else has been changed
    yet: the counters, the free handles and `recs` are written only once all went in."""
    cdef Py_ssize_t n = len(vs), j, jj, nt
    cdef dict exact1 = table.exact1
    cdef dict recs = table.recs
    cdef Rec r
    cdef tuple mkey, a
    cdef long long seq, first
    if len(args) != n:
        raise ValueError("insert_exact1_many: as many argument tuples as keys")
    if table.const_entries or len(recs) + n > table.info.size:
        return False
    seq = table.seq
    first = table.next_handle
    if seq > (1 << 62) or first > (1 << 62):  # (never: C counters stand for Python ints here)
        raise OverflowError("insert_exact1_many: table counters out of range")
    cdef list free = table.free_handles
    # the n lowest free handles, in order, then new ones (as n heap pops would give them):
    # when the heap is in ascending order already (as a bulk insert or deletes in handle
    # order leave it), its first n, read in place; else from a sorted copy (the reference's)
    cdef bint in_order = _ascending(free)
    cdef list ordered = free if in_order else sorted(free)
    cdef list taken = ordered[:n]  # (a copy: nothing the loop below runs can change it)
    nt = len(taken)
    full = table._pack_full[0]
    cdef bint atomic_aid = not _may_be_tracked(aid)
    cdef list made = [None] * n
    for j in range(n):
        v = vs[j]
        a = args[j]
        r = Rec.__new__(Rec)
        r._entry = None
        r._aid = aid
        r._args = a
        r._pkts = 0
        r._bytes = 0
        r._meter = None
        r._prio = 0
        r._seqn = seq + 1 + j
        r._seq_is_n = True
        r._hnd = <object>PyList_GET_ITEM(taken, j) if j < nt else first + (j - nt)
        if type(v) is int:
            r._full = full  # tests made when read (the property)
            mkey = _atomic((v,))
            if atomic_aid and not _may_be_tracked(a):
                PyObject_GC_UnTrack(r)
        else:  # (an int subclass: left to the collector, as the reference leaves it)
            r._tests = ((0, v, full),)
            mkey = (v,)
        r._mkey = mkey
        if PyDict_SetDefault(exact1, v, r) != <PyObject*>r:  # there already, or twice in `vs`
            for jj in range(j):
                del exact1[vs[jj]]
            return False
        made[j] = r
    for j in range(n):
        r = <Rec>made[j]
        recs[r._mkey] = r
    table.seq = seq + n
    if nt:  # (the rest, sorted: still a heap, as the reference leaves it)
        if in_order:
            del free[:nt]
        else:
            free[:] = ordered[nt:]
    table.next_handle = first + (n - nt)
    return True


def delete_exact1_many(table, list vs):
    """tables.Table.delete_exact1_many: `delete_checked((v,))` of every v of `vs`, in
    order, or nothing and False when one would fail."""
    cdef dict exact1 = table.exact1
    cdef dict recs
    cdef list free
    cdef Rec rec
    distinct = set(vs)
    if table.const_entries or len(distinct) != len(vs) or not exact1.keys() >= distinct:
        return False
    recs = table.recs
    free = table.free_handles
    for v in vs:
        got = exact1.pop(v)
        if type(got) is Rec:
            rec = <Rec>got
            del recs[rec._mkey]
            _heappush(free, rec._hnd)
        else:  # (a Rec of the reference class: a test's table)
            del recs[got.mkey]
            _heappush(free, got.hnd)
    return True


cdef inline object _uint(object b, int width):
    """int.from_bytes(b, "big") when it fits in `width` bits, else None (the builders'
    `v >> width` check)."""
    cdef const unsigned char* p
    cdef Py_ssize_t n, i
    cdef unsigned long long u = 0
    if type(b) is bytes:
        n = len(<bytes>b)
        if n <= 8:
            p = <const unsigned char*><bytes>b
            for i in range(n):
                u = (u << 8) | p[i]
            if width < 64 and (u >> width) != 0:
                return None
            return u
    v = int.from_bytes(b, "big")
    if v >> width:
        return None
    return v


def exact1_values(list rows, Py_ssize_t kslot, int kwidth, Py_ssize_t pslot, int pwidth):
    """fastwrite/builders.py's bulk_exact1 decoding: (keys, argument tuples) of a run's rows (value
    bytes in slot order), or None when a value does not fit its width; `pslot` < 0: an
    action without parameters (every argument tuple is ())."""
    cdef Py_ssize_t n = len(rows), j
    cdef list vs = [None] * n
    cdef list args = [None] * n
    cdef tuple none = ()
    cdef dict shared = {}  # one (a,) per distinct argument (immutable: sharing is invisible)
    for j in range(n):
        row = rows[j]
        v = _uint(row[kslot], kwidth)
        if v is None:
            return None
        vs[j] = v
        if pslot < 0:
            args[j] = none
        else:
            a = _uint(row[pslot], pwidth)
            if a is None:
                return None
            t = shared.get(a)
            if t is None:
                t = shared[a] = _atomic((a,))
            args[j] = t
    return vs, args


def column_run(data, Py_ssize_t r0, Py_ssize_t stride, Py_ssize_t kmax, checks):
    """fastwrite/scan.py _column_run: how many consecutive records of `stride` bytes from data[r0]
    (at most kmax) hold every (offset, one byte) of `checks`; a byte past the end of `data`
    holds nothing. It stops at the first record that fails: the work is the run found plus
    one record, never the rest of the request. Checks at consecutive offsets (an Update's
    fixed pieces) are compared as one stretch, in 8-byte words under a mask (a memcmp per
    stretch for the records whose words would reach past the end of `data`)."""
    cdef const unsigned char[::1] d = data
    cdef const unsigned char* p
    cdef Py_ssize_t size = d.shape[0], nc = len(checks), k, c, s, ns = 0, base, last = 0
    cdef Py_ssize_t[64] offs
    cdef unsigned char[64] want
    cdef Py_ssize_t[64] soff  # stretch s: the bytes want[sat[s]:sat[s] + slen[s]] at offset soff[s]
    cdef Py_ssize_t[64] sat
    cdef Py_ssize_t[64] slen
    if kmax <= 0:
        return 0
    if nc > 64 or r0 < 0 or stride <= 0:  # (a longer layout: the reference checker)
        return None
    for c in range(nc):
        off, b = checks[c]
        if off < 0:
            return None
        offs[c] = off
        want[c] = (<bytes?>b)[0]
        if off > last:
            last = off
        if ns and offs[c] == soff[ns - 1] + slen[ns - 1]:
            slen[ns - 1] += 1
        else:
            soff[ns] = off
            sat[ns] = c
            slen[ns] = 1
            ns += 1
    if size == 0:
        return 0
    # each stretch as chunks of up to 8 bytes, each compared as one 8-byte word under a
    # mask of its bytes (a word may reach into the bytes after the stretch: masked out)
    cdef uint64_t[64] cwant
    cdef uint64_t[64] cmask
    cdef Py_ssize_t[64] coff
    cdef unsigned char[8] wbytes
    cdef unsigned char[8] mbytes
    cdef Py_ssize_t nw = 0, pos, ln, reach = 0
    for s in range(ns):
        pos = 0
        while pos < slen[s]:
            ln = min(8, slen[s] - pos)
            memset(wbytes, 0, 8)
            memset(mbytes, 0, 8)
            memcpy(wbytes, &want[sat[s] + pos], ln)
            memset(mbytes, 0xFF, ln)
            memcpy(&cwant[nw], wbytes, 8)
            memcpy(&cmask[nw], mbytes, 8)
            coff[nw] = soff[s] + pos
            reach = max(reach, coff[nw] + 8)
            nw += 1
            pos += 8
    p = &d[0]
    cdef uint64_t word
    for k in range(kmax):
        base = r0 + k * stride
        if base + reach <= size:  # every word inside `data`
            for c in range(nw):
                memcpy(&word, p + base + coff[c], 8)
                if (word ^ cwant[c]) & cmask[c]:
                    return k
            continue
        if base + last >= size:  # a byte past the end: a check it cannot hold
            for c in range(nc):
                if base + offs[c] >= size or p[base + offs[c]] != want[c]:
                    return k
            continue
        for s in range(ns):
            if memcmp(p + base + soff[s], &want[sat[s]], slen[s]) != 0:
                return k
    return kmax


cdef inline object _uint_at(object data, const unsigned char* p, Py_ssize_t off, Py_ssize_t n, int width):
    """_uint of the n bytes at data[off] (p: data's bytes)."""
    cdef unsigned long long u = 0
    cdef Py_ssize_t i
    if n <= 8:
        for i in range(n):
            u = (u << 8) | p[off + i]
        if width < 64 and u >> width:
            return None
        return u
    v = int.from_bytes(data[off:off + n], "big")
    if v >> width:
        return None
    return v


def exact1_run_values(data, Py_ssize_t r0, Py_ssize_t stride, Py_ssize_t k, Py_ssize_t koff, Py_ssize_t klen,
                      int kwidth, Py_ssize_t poff, Py_ssize_t plen, int pwidth):
    """exact1_values of a run's rows read straight from the request: record j is the
    `stride` bytes at data[r0 + j*stride], its key the klen bytes at offset koff in it, its
    parameter the plen bytes at poff (poff < 0: an action without parameters). None when
    a value does not fit its width, or the layout does not lie inside `data` (the
    one-by-one path then cuts the rows)."""
    cdef const unsigned char[::1] d = data
    cdef Py_ssize_t size = d.shape[0], j, base
    cdef long long sv
    if (k <= 0 or r0 < 0 or stride <= 0 or koff < 0 or klen < 0 or koff + klen > stride
            or (poff >= 0 and (plen < 0 or poff + plen > stride)) or r0 + k * stride > size):
        return None
    cdef const unsigned char* p = &d[0]
    cdef list vs = PyList_New(k)  # (items filled below, in order: a list's NULLs are freed safely)
    cdef list args = PyList_New(k)
    cdef tuple none = ()
    cdef list small = [None] * 256  # (a,) per argument value under 256, made once per call
    cdef dict shared = {}  # and for the others (immutable: sharing is invisible)
    for j in range(k):
        base = r0 + j * stride
        v = _uint_at(data, p, base + koff, klen, kwidth)
        if v is None:
            return None
        Py_INCREF(v)
        PyList_SET_ITEM(vs, j, v)
        if poff < 0:
            t = none
        else:
            a = _uint_at(data, p, base + poff, plen, pwidth)
            if a is None:
                return None
            sv = p4sim_small_int(<PyObject*>a)
            if 0 <= sv < 256:
                t = <object>PyList_GET_ITEM(small, sv)
                if t is None:
                    t = small[sv] = _atomic((a,))
            else:
                t = shared.get(a)
                if t is None:
                    t = shared[a] = _atomic((a,))
        Py_INCREF(t)
        PyList_SET_ITEM(args, j, t)
    return vs, args
