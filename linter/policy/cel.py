"""CEL for ailint: the engine wrapper (cel-expr-python, the C++ runtime), the Kubernetes CEL
libraries it lacks, compilation once per run, and the bounds that keep a hostile expression
from hanging or crashing a run.

The engine ships CEL's core, the optional syntax (`.?`, `[?]`, `orValue`), the strings
extension (with `format`), `cel.bind`, `math.*` and `base64.*`. Added here, as Python
functions registered in one `CelExtension`: Kubernetes' quantity, URL, IP/CIDR, lists, regex
and sets libraries. Custom types (Quantity, URL, IP, CIDR) are tiny protobuf messages built at
run time, because the engine cannot carry opaque Python objects.

Bounds, all of which turn into a result the caller reports, never a hang or a crash:
- the expression length (`MAX_EXPRESSION_CHARS`), checked before compiling;
- the engine's own budget of about 10,000 comprehension iterations per evaluation;
- memory: on platforms with `RLIMIT_AS`, evaluation runs under an address-space limit of the
  process's size plus `MEMORY_HEADROOM`, so a string- or list-growth bomb (`'a'.replace('a',
  'aa')` chained, `x + x` in nested binds) fails with an allocation error instead of eating
  the machine; everywhere, expressions whose static growth factor (chained replace/join/format
  and self-concatenation) is too high are rejected at compile time (`growth_problem`);
- time: one evaluation slower than `SLOW_EVALUATION_SECONDS` disables its expression for the
  rest of the run, and a run spends at most `RUN_BUDGET_SECONDS` evaluating CEL.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from urllib.parse import parse_qs, urlsplit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_EXPRESSION_CHARS = 5000
MEMORY_HEADROOM = 256 << 20  # bytes an evaluation may allocate on top of the process's size
SLOW_EVALUATION_SECONDS = 1.0
RUN_BUDGET_SECONDS = 30.0
MAX_GROWTH_STEPS = 12  # chained growth operations (each can double a value or more)

# Kubernetes CEL functions this wrapper does not provide (each needs the API server or a
# macro the parser lacks); an expression using one is "not evaluable offline", not invalid.
UNSUPPORTED = {
    "authorizer": "the API server's authorizer (`authorizer`)",
    "serviceAccount": "the API server's authorizer (`authorizer.serviceAccount`)",
    "format": "`format.named()` or an unknown format of the Kubernetes format library",
    "semver": "the Kubernetes semver library",
    "isSemver": "the Kubernetes semver library",
    "transformList": "two-variable comprehensions (`transformList`)",
    "transformMap": "two-variable comprehensions (`transformMap`)",
    "transformMapEntry": "two-variable comprehensions (`transformMapEntry`)",
    "sortBy": "the `sortBy` macro",
    "lists": "cel-go's lists extension (`lists.range` ...)",
    "slice": "cel-go's lists extension (`slice`)",
    "flatten": "cel-go's lists extension (`flatten`)",
    "distinct": "cel-go's lists extension (`distinct`)",
    "sort": "cel-go's lists extension (`sort`)",
    "exists_one": "",  # native: listed so it is never reported as unsupported
}


class CelCompileError(Exception):
    """A syntax or type error; `line`/`col` are 1-based inside the expression."""

    def __init__(self, message: str, line: int = 1, col: int = 1, unsupported: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.unsupported = unsupported  # what Kubernetes has and ailint does not


@dataclass(frozen=True)
class Outcome:
    """One evaluation: `value` when `error` is None; `kind` says which bound or error hit."""

    value: Any = None
    error: str | None = None
    kind: str = ""  # "" ok | "error" runtime error | "budget" iterations | "memory" | "time" | "skipped"

    @property
    def ok(self) -> bool:
        return self.error is None


# -- Kubernetes quantities (exact, as resource.Quantity) ---------------------------------------
_QTY = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_QTY_SUFFIX: dict[str, Fraction] = {
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


def parse_quantity(s: str) -> Fraction:
    """A Kubernetes quantity string as an exact number; ValueError when it is not one."""
    m = _QTY.match(s) if isinstance(s, str) and len(s) <= 64 else None
    if not m:
        raise ValueError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {s!r}"
        )
    sign, digits, suffix = m.group(1), m.group(2), m.group(3) or ""
    value = Fraction(digits)
    if suffix not in _QTY_SUFFIX:
        exp = int(suffix[1:])
        if abs(exp) > 64:
            raise ValueError(f"quantity exponent out of range: {s!r}")
        value *= Fraction(10) ** exp
    else:
        value *= _QTY_SUFFIX[suffix]
    return -value if sign == "-" else value


def _canonical(v: Fraction) -> str:
    return f"{v.numerator}/{v.denominator}"


def _from_canonical(s: str) -> Fraction:
    return Fraction(s)


# -- IP and CIDR (Kubernetes' stricter parsing: no zones, no IPv4-mapped IPv6, no leading zeros)
def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if not isinstance(s, str) or "%" in s:
        raise ValueError(f"IP Address {s!r} parse error during conversion from string")
    ip = ipaddress.ip_address(s)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {s!r} is not allowed")
    return ip


def _parse_cidr(s: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    if not isinstance(s, str) or "/" not in s or "%" in s:
        raise ValueError(f"network address {s!r} parse error during conversion from string")
    iface = ipaddress.ip_interface(s)
    if isinstance(iface, ipaddress.IPv6Interface) and iface.ip.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {s!r} is not allowed")
    return iface


def _is(parse: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            parse(s)
        except ValueError:
            return False
        return True

    return check


def _parse_url(s: str) -> Any:
    """Go's url.ParseRequestURI: an absolute URL, or an absolute path."""
    if not isinstance(s, str) or not s or any(c in s for c in " \t\r\n"):
        raise ValueError(f"URL parse error during conversion from string: {s!r}")
    parts = urlsplit(s)
    if not (parts.scheme or s.startswith("/")):
        raise ValueError(f"URL parse error during conversion from string: {s!r}: invalid URI for request")
    return parts


# -- the Kubernetes format library (k8s.io/apiserver/pkg/cel/library/format.go) --------------------
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


def _regex_check(rx: str, limit: int, what: str, example: str) -> Callable[[str], list[str]]:
    pattern = re.compile(rx)

    def check(s: str) -> list[str]:
        out = []
        if len(s) > limit:
            out.append(f"must be no more than {limit} characters")
        if not pattern.fullmatch(s):
            out.append(f"{what} (e.g. '{example}', regex used for validation is '{rx}')")
        return out

    return check


def _qualified_name(s: str) -> list[str]:
    prefix, _, name = s.rpartition("/")
    out = []
    if "/" in s and not prefix:
        out.append("prefix part must be non-empty")
    elif prefix:
        out += [f"prefix part {m}" for m in _FORMATS["dns1123Subdomain"](prefix)]
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if name and not re.fullmatch(_QUALIFIED, name):
        out.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            f"with an alphanumeric character (e.g. 'MyName', regex used for validation is '{_QUALIFIED}')"
        )
    return out


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda s: check(s[:-1] if s.endswith("-") else s)


def _date(s: str, fmt: str) -> list[str]:
    import datetime

    try:
        if fmt == "date":
            datetime.date.fromisoformat(s) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s) else int("x")
        else:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", s):
                raise ValueError
            datetime.datetime.fromisoformat(s.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return [f"invalid {fmt}"]
    return []


def _base64(s: str) -> list[str]:
    import base64
    import binascii

    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": _regex_check(
        _DNS1123_LABEL,
        63,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        "my-name",
    ),
    "dns1123Subdomain": _regex_check(
        rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*",
        253,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        "example.com",
    ),
    "dns1035Label": _regex_check(
        r"[a-z]([-a-z0-9]*[a-z0-9])?",
        63,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        "my-name",
    ),
    "qualifiedName": _qualified_name,
    "labelValue": lambda s: (
        []
        if s == ""
        else _regex_check(
            _QUALIFIED,
            63,
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "MyValue",
        )(s)
    ),
    "uri": lambda s: [] if _is(_parse_url)(s) else ["invalid URI"],
    "uuid": lambda s: (
        []
        if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", s)
        else ["does not match the UUID format"]
    ),
    "byte": _base64,
    "date": lambda s: _date(s, "date"),
    "datetime": lambda s: _date(s, "datetime"),
}
_FORMATS["dns1123LabelPrefix"] = _prefix(_FORMATS["dns1123Label"])
_FORMATS["dns1123SubdomainPrefix"] = _prefix(_FORMATS["dns1123Subdomain"])
_FORMATS["dns1035LabelPrefix"] = _prefix(_FORMATS["dns1035Label"])


def format_errors(name: str, value: str) -> list[str]:
    check = _FORMATS.get(name)
    if check is None:
        raise ValueError(f"unknown format {name!r}")
    return check(value)


_FORMAT_CALL = re.compile(r"(?<![\w.])format\s*\.\s*(\w+)\s*\(\s*\)\s*\.\s*validate\s*\(")


def _rewrite_format(source: str) -> str:
    """`format.NAME().validate(X)` -> an optional built from `ailintFormatErrors('NAME', X)`:
    the engine cannot return optionals from Python functions, CEL can build them."""
    code = _strip_strings(source)
    out, pos = [], 0
    for m in _FORMAT_CALL.finditer(code):
        if m.start() < pos or m.group(1) not in _FORMATS:
            continue
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        if depth:
            return source
        arg = source[m.end() : i - 1]
        call = f"ailintFormatErrors('{m.group(1)}', {arg})"
        out.append(source[pos : m.start()])
        out.append(f"(size({call}) == 0 ? optional.none() : optional.of({call}))")
        pos = i
    return "".join(out) + source[pos:] if out else source


# -- the environment ---------------------------------------------------------------------------
class _Kube:
    """Protobuf types and the Kubernetes library, built once per process on first use."""

    def __init__(self) -> None:
        from cel_expr_python import cel
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        self.cel = cel
        fdp = descriptor_pb2.FileDescriptorProto(name="ailint_kubernetes.proto", package="kubernetes", syntax="proto3")
        for name in ("Quantity", "URL", "IP", "CIDR"):
            fdp.message_type.add(name=name).field.add(
                name="s",
                number=1,
                type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            )
        self.pool = descriptor_pool.DescriptorPool()
        self.pool.Add(fdp)
        self.msg = {
            n: message_factory.GetMessageClass(self.pool.FindMessageTypeByName(f"kubernetes.{n}"))
            for n in ("Quantity", "URL", "IP", "CIDR")
        }
        self.extension = cel.CelExtension("kubernetes", self._functions())
        self.envs: dict[tuple[str, ...], Any] = {}

    def _functions(self) -> list[Any]:
        cel = self.cel
        T = cel.Type
        Q, URL, IP, CIDR = (T(f"kubernetes.{n}") for n in ("Quantity", "URL", "IP", "CIDR"))
        S, B, INT, D = T.STRING, T.BOOL, T.INT, T.DOUBLE
        L = T.List(T.DYN)
        msg = self.msg

        def q(v: Fraction) -> Any:
            return msg["Quantity"](s=_canonical(v))

        def qv(m: Any) -> Fraction:
            return _from_canonical(m.s)

        def as_integer(m: Any) -> int:
            v = qv(m)
            if v.denominator != 1 or not -(2**63) <= v.numerator < 2**63:
                raise ValueError("cannot convert value to integer")
            return v.numerator

        def cmp(a: Any, b: Any) -> int:
            x, y = qv(a), qv(b)
            return (x > y) - (x < y)

        def ip_msg(s: str) -> Any:
            return msg["IP"](s=str(_parse_ip(s)))

        def cidr_msg(s: str) -> Any:
            _parse_cidr(s)
            return msg["CIDR"](s=s)

        def url_msg(s: str) -> Any:
            _parse_url(s)
            return msg["URL"](s=s)

        def contains_ip(c: Any, ip: Any) -> bool:
            addr = _parse_ip(ip if isinstance(ip, str) else ip.s)
            return addr in _parse_cidr(c.s).network

        def contains_cidr(c: Any, other: Any) -> bool:
            o = _parse_cidr(other if isinstance(other, str) else other.s).network
            n = _parse_cidr(c.s).network
            return o.version == n.version and o.subnet_of(n)  # type: ignore[arg-type]

        def url_port(u: Any) -> str:
            netloc = urlsplit(u.s).netloc
            m = re.search(r":(\d*)$", netloc)
            return m.group(1) if m and not netloc.endswith("]") else ""

        def url_hostname(u: Any) -> str:
            host = urlsplit(u.s).netloc.rsplit("@", 1)[-1]
            if host.startswith("["):
                return host[1 : host.find("]")] if "]" in host else host
            return host.rsplit(":", 1)[0] if ":" in host else host

        def is_sorted(xs: list[Any]) -> bool:
            return all(a <= b for a, b in itertools.pairwise(xs))

        def index_of(xs: list[Any], x: Any) -> int:
            for i, v in enumerate(xs):
                if v == x and type(v) is type(x):
                    return i
            return -1

        def last_index_of(xs: list[Any], x: Any) -> int:
            for i in range(len(xs) - 1, -1, -1):
                if xs[i] == x and type(xs[i]) is type(x):
                    return i
            return -1

        def nonempty(fn: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
            def call(xs: list[Any]) -> Any:
                if not xs:
                    raise ValueError("min/max called on an empty list")
                return fn(xs)

            return call

        def find(s: str, rx: str) -> str:
            m = _regex(rx).search(s)
            return m.group(0) if m else ""

        def find_all(s: str, rx: str, n: int = -1) -> list[str]:
            out = [m.group(0) for m in _regex(rx).finditer(s)]
            return out if n < 0 else out[:n]

        def fn(name: str, *overloads: tuple[str, Any, list[Any], Callable[..., Any], bool]) -> Any:
            # The runtime dispatches on kinds (every message is one kind, every list another):
            # overloads of one name must differ in kinds, not only in message or list types.
            return cel.FunctionDecl(
                name,
                [
                    cel.Overload(oid, ret, params, is_member=member, impl=impl)
                    for oid, ret, params, impl, member in overloads
                ],
            )

        G, M = False, True  # global function, member function
        return [
            # quantity library
            fn("quantity", ("string_to_quantity", Q, [S], lambda s: q(parse_quantity(s)), G)),
            fn("isQuantity", ("is_quantity_string", B, [S], _is(parse_quantity), G)),
            fn("sign", ("quantity_sign", INT, [Q], lambda a: (qv(a) > 0) - (qv(a) < 0), M)),
            fn("isInteger", ("quantity_is_integer", B, [Q], lambda a: qv(a).denominator == 1, M)),
            fn("asInteger", ("quantity_get_int", INT, [Q], as_integer, M)),
            fn("asApproximateFloat", ("quantity_get_float", D, [Q], lambda a: float(qv(a)), M)),
            fn(
                "add",
                ("quantity_add", Q, [Q, Q], lambda a, b: q(qv(a) + qv(b)), M),
                ("quantity_add_int", Q, [Q, INT], lambda a, b: q(qv(a) + b), M),
            ),
            fn(
                "sub",
                ("quantity_sub", Q, [Q, Q], lambda a, b: q(qv(a) - qv(b)), M),
                ("quantity_sub_int", Q, [Q, INT], lambda a, b: q(qv(a) - b), M),
            ),
            fn("isLessThan", ("quantity_less", B, [Q, Q], lambda a, b: qv(a) < qv(b), M)),
            fn("isGreaterThan", ("quantity_greater", B, [Q, Q], lambda a, b: qv(a) > qv(b), M)),
            fn("compareTo", ("quantity_compare", INT, [Q, Q], cmp, M)),
            # URL library
            fn("url", ("string_to_url", URL, [S], url_msg, G)),
            fn("isURL", ("is_url_string", B, [S], _is(_parse_url), G)),
            fn("getScheme", ("url_get_scheme", S, [URL], lambda u: urlsplit(u.s).scheme, M)),
            fn("getHost", ("url_get_host", S, [URL], lambda u: urlsplit(u.s).netloc.rsplit("@", 1)[-1], M)),
            fn("getHostname", ("url_get_hostname", S, [URL], url_hostname, M)),
            fn("getPort", ("url_get_port", S, [URL], url_port, M)),
            fn("getEscapedPath", ("url_get_escaped_path", S, [URL], lambda u: urlsplit(u.s).path, M)),
            fn(
                "getQuery",
                (
                    "url_get_query",
                    T.Map(S, T.List(S)),
                    [URL],
                    lambda u: parse_qs(urlsplit(u.s).query, keep_blank_values=True),
                    M,
                ),
            ),
            # IP and CIDR library
            fn(
                "ip",
                ("string_to_ip", IP, [S], ip_msg, G),
                ("cidr_ip", IP, [CIDR], lambda c: msg["IP"](s=str(_parse_cidr(c.s).ip)), M),
            ),
            fn("isIP", ("is_ip_string", B, [S], _is(_parse_ip), G)),
            fn("ip.isCanonical", ("ip_is_canonical", B, [S], lambda s: str(_parse_ip(s)) == s, G)),
            fn("family", ("ip_family", INT, [IP], lambda a: _parse_ip(a.s).version, M)),
            fn("isUnspecified", ("ip_is_unspecified", B, [IP], lambda a: _parse_ip(a.s).is_unspecified, M)),
            fn("isLoopback", ("ip_is_loopback", B, [IP], lambda a: _parse_ip(a.s).is_loopback, M)),
            fn(
                "isLinkLocalMulticast",
                (
                    "ip_is_link_local_multicast",
                    B,
                    [IP],
                    lambda a: (
                        _parse_ip(a.s)
                        in ipaddress.ip_network("224.0.0.0/24" if _parse_ip(a.s).version == 4 else "ff02::/16")
                    ),
                    M,
                ),
            ),
            fn("isLinkLocalUnicast", ("ip_is_link_local_unicast", B, [IP], lambda a: _parse_ip(a.s).is_link_local, M)),
            fn("isGlobalUnicast", ("ip_is_global_unicast", B, [IP], lambda a: _global_unicast(_parse_ip(a.s)), M)),
            fn("cidr", ("string_to_cidr", CIDR, [S], cidr_msg, G)),
            fn("isCIDR", ("is_cidr_string", B, [S], _is(_parse_cidr), G)),
            fn(
                "containsIP",
                ("cidr_contains_ip_ip", B, [CIDR, IP], contains_ip, M),
                ("cidr_contains_ip_string", B, [CIDR, S], contains_ip, M),
            ),
            fn(
                "containsCIDR",
                ("cidr_contains_cidr", B, [CIDR, CIDR], contains_cidr, M),
                ("cidr_contains_cidr_string", B, [CIDR, S], contains_cidr, M),
            ),
            fn("masked", ("cidr_masked", CIDR, [CIDR], lambda c: msg["CIDR"](s=str(_parse_cidr(c.s).network)), M)),
            fn("prefixLength", ("cidr_prefix_length", INT, [CIDR], lambda c: _parse_cidr(c.s).network.prefixlen, M)),
            # one message-typed overload per name (the runtime dispatches on kinds): string(ip)
            # only, string(cidr) is not available
            fn("string", ("ip_to_string", S, [IP], lambda a: a.s, G)),
            # lists library
            fn("isSorted", ("list_is_sorted", B, [L], is_sorted, M)),
            fn("sum", ("list_sum", T.DYN, [L], _sum, M)),
            fn("min", ("list_min", T.DYN, [L], nonempty(min), M)),
            fn("max", ("list_max", T.DYN, [L], nonempty(max), M)),
            fn("indexOf", ("list_index_of", INT, [L, T.DYN], index_of, M)),
            fn("lastIndexOf", ("list_last_index_of", INT, [L, T.DYN], last_index_of, M)),
            # regex library
            fn("find", ("string_find", S, [S, S], find, M)),
            fn(
                "findAll",
                ("string_find_all", T.List(S), [S, S], find_all, M),
                ("string_find_all_n", T.List(S), [S, S, INT], find_all, M),
            ),
            # format library (`format.NAME().validate(s)`, rewritten to this by _rewrite_format)
            fn("ailintFormatErrors", ("ailint_format_errors", T.List(S), [S, S], format_errors, G)),
            # sets extension
            fn("sets.contains", ("sets_contains", B, [L, L], lambda a, b: all(x in a for x in b), G)),
            fn(
                "sets.equivalent",
                ("sets_equivalent", B, [L, L], lambda a, b: all(x in b for x in a) and all(x in a for x in b), G),
            ),
            fn("sets.intersects", ("sets_intersects", B, [L, L], lambda a, b: any(x in b for x in a), G)),
        ]

    def env(self, variables: tuple[str, ...]) -> Any:
        got = self.envs.get(variables)
        if got is None:
            cel = self.cel
            from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

            got = self.envs[variables] = cel.NewEnv(
                self.pool,
                variables=dict.fromkeys(variables, cel.Type.DYN),
                extensions=[
                    ext_strings.ExtStrings(),
                    ext_optional.ExtOptional(),
                    ext_math.ExtMath(),
                    ext_bindings.ExtBindings(),
                    ext_encoders.ExtEncoders(),
                    self.extension,
                ],
            )
        return got


def _sum(xs: list[Any]) -> Any:
    if any(isinstance(x, float) for x in xs):
        return float(sum(xs))
    return sum(xs)


def _global_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's net.IP.IsGlobalUnicast: not unspecified, loopback, link-local or multicast (private is global)."""
    if ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (ip.is_unspecified or ip.is_loopback or ip.is_link_local or ip.is_multicast)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _regex(rx: str) -> re.Pattern[str]:
    got = _REGEX_CACHE.get(rx)
    if got is None:
        if len(rx) > MAX_EXPRESSION_CHARS:
            raise ValueError("regular expression too long")
        try:
            got = re.compile(rx)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {rx!r}: {exc}") from None
        if len(_REGEX_CACHE) < 1024:
            _REGEX_CACHE[rx] = got
    return got


_KUBE: _Kube | None = None
_LOCK = threading.Lock()


def _kube() -> _Kube:
    global _KUBE
    if _KUBE is None:
        with _LOCK:
            if _KUBE is None:
                _KUBE = _Kube()
    return _KUBE


def available() -> str | None:
    """None when the CEL engine can be imported, else why not."""
    try:
        import cel_expr_python.cel  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as exc:
        return f"the CEL engine is not installed ({exc}); reinstall ailint"
    return None


# -- compilation ---------------------------------------------------------------------------------
_ERROR_POS = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
_UNDECLARED = re.compile(r"undeclared reference to '([\w.]+)'|found no matching overload for '([\w.]+)'")


def _strip_strings(src: str) -> str:
    """The expression with string literals blanked (so a word inside quotes is not a call)."""
    return re.sub(
        r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"",
        lambda m: " " * len(m.group(0)),
        src,
        flags=re.S,
    )


def growth_problem(src: str) -> str | None:
    """Why an expression could grow a value without bound, or None.

    Each `replace`, `join`, `format` or `+` applied inside `cel.bind` or a macro body can
    double a string or a list (one iteration of the engine's budget each); a chain of them is
    exponential. This counts them on the code with string literals removed and refuses more
    than MAX_GROWTH_STEPS (ordinary policies use a handful).
    """
    code = _strip_strings(src)
    growth = len(re.findall(r"\.\s*(?:replace|join|format|repeat)\s*\(", code))
    binds = len(re.findall(r"\bcel\s*\.\s*bind\s*\(", code))
    nested_maps = len(re.findall(r"\.\s*map\s*\(", code))
    concat = code.count("+")
    score = growth + (concat if binds or nested_maps > 1 else 0)
    if score > MAX_GROWTH_STEPS:
        return (
            f"{score} chained growth operations (replace/join/format/`+` under bind or nested map; "
            f"at most {MAX_GROWTH_STEPS}): the value could grow exponentially"
        )
    return None


_CROSS_NUMERIC = re.compile(
    r"no matching overload for '_(?:[<>]=?|[=!]=)_' applied to '\((?:int|uint|double), (?:int|uint|double)\)'"
)


def _other_errors(text: str) -> bool:
    """Whether a compile error text holds errors other than cross-type numeric comparisons."""
    return any(not _CROSS_NUMERIC.search(m.group(3)) for m in _ERROR_POS.finditer(text))


_TWO_VAR = re.compile(r"\.\s*(?:all|exists|existsOne|exists_one|map|filter)\s*\(\s*\w+\s*,\s*\w+\s*,")


def _unsupported(source: str, message: str) -> str | None:
    """What Kubernetes CEL has and this engine lacks, when that explains a compile error."""
    u = _UNDECLARED.search(message)
    name = (u.group(1) or u.group(2)) if u else ""
    if name:
        head, _, rest = name.partition(".")
        if head == "format" and (rest or "(in container" in message):
            return UNSUPPORTED["format"]
        for part in (name, head, name.rsplit(".", 1)[-1]):
            if part != "format" and UNSUPPORTED.get(part):
                return UNSUPPORTED[part]
    if "'string' applied to '(kubernetes.CIDR)'" in message:
        return "`string(cidr)` (use the CIDR's source string)"
    if _TWO_VAR.search(_strip_strings(source)):
        return "two-variable comprehensions (`all(k, v, ...)`), Kubernetes 1.33+"
    return None


@dataclass(frozen=True)
class Program:
    """A checked CEL program with the variables it reads and the type it returns."""

    source: str
    variables: tuple[str, ...]
    compiled: Any
    returns: str  # the checked result type's name: "bool", "string", "dyn", ...


_PROGRAMS: dict[tuple[tuple[str, ...], str], Program] = {}


def compile_expression(source: str, variables: Sequence[str]) -> Program:
    """Compile (parse and type-check) once per process; CelCompileError on any problem."""
    key = (tuple(variables), source)
    got = _PROGRAMS.get(key)
    if got is not None:
        return got
    if not isinstance(source, str) or not source.strip():
        raise CelCompileError("empty expression")
    if len(source) > MAX_EXPRESSION_CHARS:
        raise CelCompileError(f"expression of {len(source)} characters is over the limit of {MAX_EXPRESSION_CHARS}")
    if re.search(r"(?<![.\w])authorizer\b", _strip_strings(source)) and "authorizer" in variables:
        m = re.search(r"(?<![.\w])authorizer\b", _strip_strings(source))
        assert m is not None
        line = source.count("\n", 0, m.start()) + 1
        col = m.start() - (source.rfind("\n", 0, m.start()) + 1) + 1
        raise CelCompileError(f"uses {UNSUPPORTED['authorizer']}", line, col, unsupported=UNSUPPORTED["authorizer"])
    why = growth_problem(source)
    if why:
        raise CelCompileError(why)
    kube = _kube()
    env = kube.env(tuple(variables))
    text_to_compile = _rewrite_format(source) if "format" in source else source
    try:
        try:
            compiled = env.compile(text_to_compile)
        except RuntimeError as exc:
            # Kubernetes enables cross-type numeric comparisons (`double(x) > 0`, `1 == 1.0`);
            # this checker does not, its runtime does: check everything else, then run unchecked
            if not _CROSS_NUMERIC.search(str(exc)) or _other_errors(str(exc)):
                raise
            compiled = env.compile(text_to_compile, disable_check=True)
    except RuntimeError as exc:
        text = str(exc)
        found = list(_ERROR_POS.finditer(text))
        m = next((x for x in found if not _CROSS_NUMERIC.search(x.group(3))), found[0] if found else None)
        if not m:
            raise CelCompileError(text.strip().split("\n")[0]) from None
        message = m.group(3).strip()
        raise CelCompileError(message, int(m.group(1)), int(m.group(2)), _unsupported(source, message)) from None
    rt = compiled.return_type()
    try:
        returns = rt.name().lower()
    except Exception:
        returns = "dyn"
    prog = Program(source, tuple(variables), compiled, returns)
    if len(_PROGRAMS) < 100_000:
        _PROGRAMS[key] = prog
    return prog


# -- evaluation under bounds ----------------------------------------------------------------------
class Budget:
    """Time spent evaluating CEL in this run, and the expressions disabled as too slow."""

    def __init__(self, seconds: float = RUN_BUDGET_SECONDS) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self.slow: set[str] = set()
        self.exhausted = False


_BUDGET = Budget()
_GUARD_DEPTH = 0
_GUARD_LOCK = threading.Lock()
_SAVED_LIMIT: tuple[int, int] | None = None


def new_run(seconds: float = RUN_BUDGET_SECONDS) -> Budget:
    """Start a run's budget (the CLI calls this once per run, through the provider)."""
    global _BUDGET
    _BUDGET = Budget(seconds)
    return _BUDGET


def _address_space() -> int | None:
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * resource.getpagesize()
    except (OSError, ImportError, ValueError, IndexError):
        return None


@contextmanager
def memory_guard() -> Iterator[None]:
    """Limit the address space while CEL runs (Linux): a growth bomb fails to allocate.

    Re-entrant and shared between threads: the first entrant sets the limit, the last one
    restores it. Where `RLIMIT_AS` cannot be set, the static growth check is the bound.
    """
    global _GUARD_DEPTH, _SAVED_LIMIT
    with _GUARD_LOCK:
        _GUARD_DEPTH += 1
        if _GUARD_DEPTH == 1:
            size = _address_space()
            if size is not None:
                try:
                    import resource

                    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
                    want = size + MEMORY_HEADROOM
                    if (hard == resource.RLIM_INFINITY or want < hard) and (
                        soft == resource.RLIM_INFINITY or want < soft
                    ):
                        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
                        _SAVED_LIMIT = (soft, hard)
                except (ImportError, ValueError, OSError):
                    _SAVED_LIMIT = None
    try:
        yield
    finally:
        with _GUARD_LOCK:
            _GUARD_DEPTH -= 1
            if _GUARD_DEPTH == 0 and _SAVED_LIMIT is not None:
                try:
                    import resource

                    resource.setrlimit(resource.RLIMIT_AS, _SAVED_LIMIT)
                except (ImportError, ValueError, OSError):
                    pass
                _SAVED_LIMIT = None


def activation(variables: Sequence[str], data: Mapping[str, Any]) -> Any:
    """One activation per subject: every expression over it reuses the converted values."""
    env = _kube().env(tuple(variables))
    return env.Activation({k: data.get(k) for k in variables})


def evaluate(program: Program, act: Any) -> Outcome:
    """Evaluate under the run's bounds; never raises."""
    budget = _BUDGET
    if budget.exhausted:
        return Outcome(error=f"the run's CEL time budget of {budget.seconds:.0f} s is spent", kind="time")
    if program.source in budget.slow:
        return Outcome(error="disabled for this run after an evaluation over the time bound", kind="time")
    cel = _kube().cel
    started = time.perf_counter()
    try:
        with memory_guard():
            result = program.compiled.eval(act)
            kind = "error" if result.type() == cel.Type.ERROR else ""
            try:
                value = result.plain_value()
            except (TypeError, ValueError, AssertionError):  # an optional, a type: no Python form
                kind, value = "error", f"gave a value of type {_type_name(result)}, which has no plain form"
    except MemoryError:
        return Outcome(error=f"evaluation needed more than {MEMORY_HEADROOM >> 20} MiB of memory", kind="memory")
    except RuntimeError as exc:
        msg = str(exc).strip()
        if "budget" in msg.lower():
            return Outcome(error="evaluation exceeded the iteration budget (about 10,000 iterations)", kind="budget")
        return Outcome(error=msg.split("\n")[0], kind="error")
    finally:
        took = time.perf_counter() - started
        budget.spent += took
        if took > SLOW_EVALUATION_SECONDS:
            budget.slow.add(program.source)
        if budget.spent > budget.seconds:
            budget.exhausted = True
    if kind:
        return Outcome(error=_clean_error(str(value)), kind="error")
    return Outcome(value=_plain(value))


def _type_name(result: Any) -> str:
    try:
        return str(result.type().name())
    except Exception:
        return "unknown"


def _clean_error(msg: str) -> str:
    msg = re.sub(r"^[A-Z_]+: ", "", msg.strip())
    msg = re.sub(r"\s*\[[A-Z_]+\]$", "", msg)
    m = re.match(r"Key not found in map : \"(.*)\"$", msg)
    if m:
        return f"no such key: {m.group(1)}"
    return msg.split("\n")[0][:300]


def _plain(v: Any) -> Any:
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def describe(value: Any) -> str:
    """A short rendering of a CEL value for messages."""
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "s"):
        return f"{value.DESCRIPTOR.name.lower()}({value.s!r})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
