"""Fabric topologies as data: hosts, switches and the links between them.

A topology says nothing about forwarding: `controller.fabric.routing` derives each switch's
routes and ECMP groups from it. Addressing is fixed by position so that a topology is fully
described by its generator's arguments: switch number `i` owns the prefix 10.0.i.0/24 and its
k-th host (port k+1, k from 0) is 10.0.i.(k+1); every port MAC and router MAC is derived from
(switch number, port).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_BPS = 10e9
DEFAULT_DELAY_NS = 1000  # one-way propagation delay (200 m of fibre)


@dataclass(frozen=True)
class HostNode:
    name: str
    switch: str
    port: int
    ip: str
    mac: str


@dataclass(frozen=True)
class SwitchNode:
    name: str
    index: int  # the /24 it owns and the byte in its MACs

    @property
    def router_mac(self) -> str:
        return f"02:00:00:{self.index:02x}:00:fe"

    def port_mac(self, port: int) -> str:
        return f"02:00:00:{self.index:02x}:{port >> 8:02x}:{port & 0xFF:02x}"

    @property
    def prefix(self) -> str:
        return f"10.0.{self.index}.0/24"


@dataclass(frozen=True)
class Link:
    """A full-duplex cable. `a`/`b` are (node, port); a host end has port 0 on the host."""

    a: tuple[str, int]
    b: tuple[str, int]
    bps: float = DEFAULT_BPS
    delay_ns: int = DEFAULT_DELAY_NS


@dataclass
class Topology:
    name: str
    switches: dict[str, SwitchNode] = field(default_factory=dict)
    hosts: dict[str, HostNode] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)

    def add_switch(self, name: str) -> SwitchNode:
        if name in self.switches or name in self.hosts:
            raise ValueError(f"duplicate node name {name!r}")
        if len(self.switches) >= 250:
            raise ValueError("at most 250 switches (one /24 each under 10.0.0.0/16)")
        sw = SwitchNode(name, len(self.switches))
        self.switches[name] = sw
        return sw

    def add_host(
        self,
        name: str,
        switch: str,
        port: int,
        bps: float = DEFAULT_BPS,
        delay_ns: int = DEFAULT_DELAY_NS,
    ) -> HostNode:
        if name in self.switches or name in self.hosts:
            raise ValueError(f"duplicate node name {name!r}")
        sw = self.switches[switch]
        if not 1 <= port <= 250:
            raise ValueError(f"{name}: host port {port} must be 1..250 (it is the address byte)")
        h = HostNode(
            name,
            switch,
            port,
            f"10.0.{sw.index}.{port}",
            f"02:{sw.index:02x}:00:00:{port >> 8:02x}:{port & 0xFF:02x}",
        )
        self.hosts[name] = h
        self._link(Link((name, 0), (switch, port), bps, delay_ns))
        return h

    def connect(
        self,
        a: str,
        pa: int,
        b: str,
        pb: int,
        bps: float = DEFAULT_BPS,
        delay_ns: int = DEFAULT_DELAY_NS,
    ) -> None:
        if a not in self.switches or b not in self.switches:
            raise ValueError(f"connect: {a!r} and {b!r} must both be switches")
        self._link(Link((a, pa), (b, pb), bps, delay_ns))

    def _link(self, link: Link) -> None:
        if link.bps <= 0 or link.delay_ns < 1:
            raise ValueError(
                f"link {link.a}-{link.b}: speed must be > 0 and delay >= 1 ns "
                "(the engine's lookahead is the smallest delay)"
            )
        used = {end for lk in self.links for end in (lk.a, lk.b)}
        for end in (link.a, link.b):
            if end in used and end[0] in self.switches:
                raise ValueError(f"port {end[1]} of {end[0]} is already cabled")
        self.links.append(link)

    # -- views
    def peer(self, node: str, port: int) -> tuple[str, int, Link] | None:
        """What the cable on (node, port) reaches: (node, port, link)."""
        for lk in self.links:
            if lk.a == (node, port):
                return lk.b[0], lk.b[1], lk
            if lk.b == (node, port):
                return lk.a[0], lk.a[1], lk
        return None

    def switch_ports(self, switch: str) -> dict[int, tuple[str, int, Link]]:
        out = {}
        for lk in self.links:
            for end, other in ((lk.a, lk.b), (lk.b, lk.a)):
                if end[0] == switch:
                    out[end[1]] = (other[0], other[1], lk)
        return dict(sorted(out.items()))

    def hosts_of(self, switch: str) -> list[HostNode]:
        return sorted((h for h in self.hosts.values() if h.switch == switch), key=lambda h: h.port)

    @property
    def min_delay_ns(self) -> int:
        return min((lk.delay_ns for lk in self.links), default=DEFAULT_DELAY_NS)


def leaf_spine(
    spines: int = 2,
    leaves: int = 4,
    hosts_per_leaf: int = 4,
    bps: float = DEFAULT_BPS,
    delay_ns: int = DEFAULT_DELAY_NS,
    spine_delay_ns: list[int] | None = None,
) -> Topology:
    """S spines x L leaves x H hosts per leaf. Leaf ports 1..H face hosts, H+1..H+S the
    spines (spine j on port H+1+j); spine port i+1 faces leaf i. `spine_delay_ns[j]`: the
    cable delay of spine j's links (unequal paths), `delay_ns` when not given."""
    if spine_delay_ns is not None and len(spine_delay_ns) != spines:
        raise ValueError("leaf_spine: spine_delay_ns needs one delay per spine")
    if spines < 1 or leaves < 1 or hosts_per_leaf < 1:
        raise ValueError("leaf_spine: spines, leaves and hosts per leaf must be >= 1")
    if leaves > 200 or hosts_per_leaf + spines > 250:
        raise ValueError("leaf_spine: too many ports for the addressing plan")
    t = Topology(f"leafspine-{spines}x{leaves}x{hosts_per_leaf}")
    for i in range(leaves):
        t.add_switch(f"leaf{i}")
    for j in range(spines):
        t.add_switch(f"spine{j}")
    for i in range(leaves):
        for k in range(hosts_per_leaf):
            t.add_host(f"h{i}_{k}", f"leaf{i}", k + 1, bps, delay_ns)
        for j in range(spines):
            d = spine_delay_ns[j] if spine_delay_ns is not None else delay_ns
            t.connect(f"leaf{i}", hosts_per_leaf + 1 + j, f"spine{j}", i + 1, bps, d)
    return t


def fat_tree(k: int = 4, bps: float = DEFAULT_BPS, delay_ns: int = DEFAULT_DELAY_NS) -> Topology:
    """A k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge switches
    e<pod>_<i> and k/2 aggregation switches a<pod>_<j>, (k/2)^2 core switches c<j>_<m>,
    k^3/4 hosts h<pod>_<i>_<n>. Edge ports 1..k/2 face hosts, k/2+1+j aggregation j;
    aggregation ports 1+i face edge i, k/2+1+m core c<j>_<m>; core port 1+pod faces pod."""
    if k < 2 or k % 2:
        raise ValueError("fat_tree: k must be even and >= 2")
    half = k // 2
    if k * k + half * half > 250:
        raise ValueError("fat_tree: too many switches for the addressing plan (k <= 14)")
    t = Topology(f"fattree-k{k}")
    for p in range(k):
        for i in range(half):
            t.add_switch(f"e{p}_{i}")
        for j in range(half):
            t.add_switch(f"a{p}_{j}")
    for j in range(half):
        for m in range(half):
            t.add_switch(f"c{j}_{m}")
    for p in range(k):
        for i in range(half):
            for n in range(half):
                t.add_host(f"h{p}_{i}_{n}", f"e{p}_{i}", n + 1, bps, delay_ns)
            for j in range(half):
                t.connect(f"e{p}_{i}", half + 1 + j, f"a{p}_{j}", i + 1, bps, delay_ns)
        for j in range(half):
            for m in range(half):
                t.connect(f"a{p}_{j}", half + 1 + m, f"c{j}_{m}", p + 1, bps, delay_ns)
    return t


def ring(
    switches: int = 4,
    hosts_per_switch: int = 1,
    bps: float = DEFAULT_BPS,
    delay_ns: int = DEFAULT_DELAY_NS,
) -> Topology:
    """A ring of switches r0..r(N-1); port H+1 goes clockwise (to r(i+1)), port H+2
    counter-clockwise (to r(i-1))."""
    if switches < 3:
        raise ValueError("ring: at least 3 switches")
    if hosts_per_switch < 0 or hosts_per_switch > 240:
        raise ValueError("ring: hosts per switch must be 0..240")
    h = hosts_per_switch
    t = Topology(f"ring-{switches}x{h}")
    for i in range(switches):
        t.add_switch(f"r{i}")
    for i in range(switches):
        for k in range(h):
            t.add_host(f"h{i}_{k}", f"r{i}", k + 1, bps, delay_ns)
        t.connect(f"r{i}", h + 1, f"r{(i + 1) % switches}", h + 2, bps, delay_ns)
    return t


def clockwise_edges(t: Topology) -> set[tuple[str, str]]:
    """The directed switch edges r(i) -> r(i+1) of a ring (for one-way routing)."""
    n = len(t.switches)
    return {(f"r{i}", f"r{(i + 1) % n}") for i in range(n)}
