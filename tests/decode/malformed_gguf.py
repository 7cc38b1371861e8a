#!/usr/bin/env python3
"""malformed_gguf.py — issue 30's malformed-model replay: the tiny valid
models of every architecture (mk_gguf_bases, from the decode tests'
generator) mutated field by field — header counts, every metadata value and
type, string and array lengths, key lengths, tensor dims, types and offsets,
alignment, the size keys against the tensors, the tokenizer against the
embedding — and each run through `crucible decode` (and `generate` on a
sample). Each must exit 2 with a message naming the file and the key or
tensor (or, for a mutation that leaves a valid model, exit 0), with no
sanitizer report, no signal and no hang.

usage: malformed_gguf.py CRUCIBLE MK_GGUF_BASES [--full] [--jobs N]
                         [--timeout S] [--asan] [--report CSV] [--keep DIR]"""
import argparse
import concurrent.futures as cf
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SAN = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B",
       U64: "<Q", I64: "<q", F64: "<d"}


class KV:
    def __init__(self, key, type_, value, atype=None):
        self.key, self.type, self.value, self.atype = key, type_, value, atype


class Tensor:
    def __init__(self, name, ne, type_, offset):
        self.name, self.ne, self.type, self.offset = name, list(ne), type_, offset


class GGUF:
    """A parsed file: metadata, tensor infos, the data blob; write() lays
    it out again, remembering where each field went (for byte patches)."""

    def __init__(self, raw):
        self.pos = 0
        self.raw = raw
        assert raw[:4] == b"GGUF"
        self.version, nt, nkv = struct.unpack_from("<IQQ", raw, 4)
        self.pos = 24
        self.kvs = [self.rd_kv() for _ in range(nkv)]
        self.tensors = [self.rd_tensor() for _ in range(nt)]
        al = next((k.value for k in self.kvs if k.key == "general.alignment"), 32)
        self.align = al
        start = (self.pos + al - 1) // al * al
        self.data = raw[start:]

    def rd(self, fmt):
        v = struct.unpack_from(fmt, self.raw, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def rd_str(self):
        n = self.rd("<Q")
        s = self.raw[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8", "surrogateescape")

    def rd_val(self, t):
        if t == STR:
            return self.rd_str()
        return self.rd(FMT[t])

    def rd_kv(self):
        key = self.rd_str()
        t = self.rd("<I")
        if t == ARR:
            at = self.rd("<I")
            n = self.rd("<Q")
            return KV(key, t, [self.rd_val(at) for _ in range(n)], at)
        return KV(key, t, self.rd_val(t))

    def rd_tensor(self):
        name = self.rd_str()
        nd = self.rd("<I")
        ne = [self.rd("<Q") for _ in range(nd)]
        t = self.rd("<I")
        off = self.rd("<Q")
        return Tensor(name, ne, t, off)

    def write(self, version=None, n_tensors=None, n_kv=None):
        """(bytes, {field: offset}) of the file."""
        out = bytearray(b"GGUF")
        at = {}
        at["version"] = len(out)
        out += struct.pack("<I", self.version if version is None else version)
        at["n_tensors"] = len(out)
        out += struct.pack("<Q", len(self.tensors) if n_tensors is None else n_tensors)
        at["n_kv"] = len(out)
        out += struct.pack("<Q", len(self.kvs) if n_kv is None else n_kv)

        def wstr(s, tag):
            b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s
            at[tag] = len(out)
            out.extend(struct.pack("<Q", len(b)) + b)

        def wval(t, v, tag):
            if t == STR:
                wstr(v, tag)
            else:
                at[tag] = len(out)
                out.extend(struct.pack(FMT[t], v))
        for kv in self.kvs:
            wstr(kv.key, "key:" + kv.key)
            at["type:" + kv.key] = len(out)
            out += struct.pack("<I", kv.type)
            if kv.type == ARR:
                at["atype:" + kv.key] = len(out)
                out += struct.pack("<I", kv.atype)
                at["alen:" + kv.key] = len(out)
                out += struct.pack("<Q", len(kv.value))
                for i, v in enumerate(kv.value):
                    wval(kv.atype, v, "elem:%s:%d" % (kv.key, i) if i < 4 else "elem")
            else:
                wval(kv.type, kv.value, "val:" + kv.key)
        for t in self.tensors:
            wstr(t.name, "tname:" + t.name)
            at["ndims:" + t.name] = len(out)
            out += struct.pack("<I", len(t.ne))
            for k, e in enumerate(t.ne):
                at["ne%d:%s" % (k, t.name)] = len(out)
                out += struct.pack("<Q", e)
            at["ttype:" + t.name] = len(out)
            out += struct.pack("<I", t.type)
            at["toff:" + t.name] = len(out)
            out += struct.pack("<Q", t.offset)
        at["data"] = len(out)
        out += b"\0" * ((-len(out)) % self.align)
        out += self.data
        return bytes(out), at


def clone(g):
    import copy
    return copy.deepcopy(g)


def kv(g, key):
    return next((k for k in g.kvs if k.key == key), None)


U32_VALS = [0, 1, 2, 3, 7, 1 << 16, 1 << 24, (1 << 30), (1 << 30) + 1, (1 << 31) - 1, 1 << 31, (1 << 32) - 1]
U64_VALS = [1 << 32, 1 << 40, 1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


def mutations(arch, g, full):
    """(suffix, bytes, fields a message may name, must_fail)."""
    raw, at = g.write()
    A = arch + "."
    tnames = [t.name for t in g.tensors]

    def patch(fmt, off, v):
        b = bytearray(raw)
        struct.pack_into(fmt, b, off, v)
        return bytes(b)
    hdr = ["count", "tensor", "key", "truncated", "past the end", "offset"]
    # the header
    for v in (0, 2, 4, 1 << 31):
        yield "version=%d" % v, patch("<I", at["version"], v), ["version"], True
    yield "magic", b"GGUX" + raw[4:], ["GGUF", "magic"], True
    for f in ("n_tensors", "n_kv"):
        n = len(g.tensors) if f == "n_tensors" else len(g.kvs)
        for v in [0, 1, n - 1, n + 1, 1 << 31, 1 << 32] + U64_VALS[2:]:
            if v == n:
                continue
            yield "%s=%d" % (f, v), patch("<Q", at[f], v), hdr + ["tensor", "key", "metadata"], True
    # truncations: at each section boundary, and mid-way through the data
    cuts = [10, 24, at["type:general.architecture"], at["tname:" + tnames[0]], at["data"],
            at["data"] + 1, len(raw) // 2, len(raw) - 1]
    for c in cuts if full else cuts[::2]:
        yield "truncate=%d" % c, raw[:c], hdr + ["bytes", "GGUF"], True
    # every metadata value, kept at its type
    for k in g.kvs:
        if k.type in (U32, I32, U64, I64, U16, I16, U8, I8) and (full or k.key.startswith(A) or
                                                             "token_id" in k.key):
            vals = U32_VALS if k.type in (U32, U64) else [0, 1, -1, 2, (1 << 30), (1 << 31) - 1, -(1 << 31)]
            if k.type in (U64, I64) and full:
                vals = vals + U64_VALS[:3]
            for v in vals:
                if v == k.value:
                    continue
                try:
                    b = patch(FMT[k.type], at["val:" + k.key], v)
                except struct.error:
                    continue
                yield "%s=%d" % (k.key, v), b, [k.key], False
        elif k.type == F32:
            for v in (0.0, -1.0, float("nan"), float("inf"), 1e30):
                yield "%s=%r" % (k.key, v), patch("<f", at["val:" + k.key], v), [k.key], False
        elif k.type == BOOL:
            yield "%s=7" % k.key, patch("<B", at["val:" + k.key], 7), [k.key], False
        elif k.type == STR:
            n = len(k.value.encode("utf-8", "surrogateescape"))
            for v in (n + 1, n + 1000, 1 << 32, (1 << 63) - 1, (1 << 64) - 1):
                yield "strlen %s=%d" % (k.key, v), patch("<Q", at["val:" + k.key], v), [k.key] + hdr, True
        elif k.type == ARR:
            n = len(k.value)
            for v in [0, 1, n - 1, n + 1, 1 << 31, (1 << 64) - 1] if full else [0, n + 1, (1 << 64) - 1]:
                yield "arrlen %s=%d" % (k.key, v), patch("<Q", at["alen:" + k.key], v), [k.key] + hdr, v > n
            for v in (ARR, 13, STR if k.atype != STR else U32, 1 << 31):
                yield "arrtype %s=%d" % (k.key, v), patch("<I", at["atype:" + k.key], v), [k.key] + hdr, True
        # the key's type changed under its value
        for v in ([STR, ARR, 13, F32, U64, U8, BOOL, F64] if full else [STR, ARR, 13]):
            if v == k.type:
                continue
            yield "type %s=%d" % (k.key, v), patch("<I", at["type:" + k.key], v), [k.key] + hdr + [
                "general.architecture", "tokenizer"], False
        # the key's own length
        for v in (0, 1 << 30, (1 << 64) - 1):
            yield "keylen %s=%d" % (k.key, v), patch("<Q", at["key:" + k.key], v), hdr + [
                "general.architecture", k.key], v != 0
    # keys set to values of another type, and removed
    for k in g.kvs:
        if not full and not k.key.startswith(A):
            continue
        for nt, nv in ((STR, "x"), (I32, -1), (I64, -(1 << 40)), (U64, (1 << 64) - 1), (F32, 2.5),
                       (F64, 1e300), (ARR, None)):
            if nt == k.type:
                continue
            h = clone(g)
            kk = kv(h, k.key)
            kk.type, kk.value = nt, nv
            if nt == ARR:
                kk.atype, kk.value = U32, [1, 2]
            yield "retype %s=%d" % (k.key, nt), h.write()[0], [k.key, "general.architecture"], False
        h = clone(g)
        h.kvs = [x for x in h.kvs if x.key != k.key]
        yield "-%s" % k.key, h.write()[0], [k.key, "tokenizer", "tensor"], False
    # keys a model may have, added with values out of range
    extra = [("general.alignment", U32, v) for v in (0, 3, 1 << 20, (1 << 32) - 1)]
    extra += [(A + "context_length", U32, v) for v in (0, 1, 2, (1 << 31))]
    extra += [(A + "rope.dimension_count", U32, v) for v in (0, 1, 3, 1 << 20)]
    extra += [(A + "attention.sliding_window", U32, v) for v in (0, 1, (1 << 31) - 1)]
    extra += [(A + "attention.sliding_window_pattern", U32, v) for v in (0, 1, (1 << 30))]
    extra += [(A + "attention.key_length", U32, v) for v in (0, 1, 2, 6, 1 << 30)]
    extra += [(A + "attention.value_length", U32, v) for v in (0, 32, 1 << 30)]
    extra += [(A + k, U32, v) for k in ("expert_count", "expert_used_count", "expert_feed_forward_length")
              for v in (0, 1, 5, 1 << 30)]
    extra += [(A + "rope.scaling.type", STR, v) for v in ("yarn", "", "linear")]
    extra += [(A + "rope.scaling.factor", F32, v) for v in (0.0, -1.0, float("nan"))]
    extra += [(A + "final_logit_softcapping", F32, 30.0)]
    extra += [("tokenizer.ggml.model", STR, v) for v in ("llama", "bert", "", "gpt2")]
    extra += [("tokenizer.ggml.%s_token_id" % t, U32, v) for t in ("bos", "eos", "padding", "unknown")
              for v in (1 << 20, (1 << 32) - 1)]
    for key, t, v in extra:
        h = clone(g)
        k0 = kv(h, key)
        if k0:
            k0.type, k0.value, k0.atype = t, v, None
        else:
            h.kvs.append(KV(key, t, v))
        yield "add %s=%r" % (key, v), h.write()[0], [key, key.split(".")[-1]], False
    # the tokenizer against the embedding: more tokens, fewer, and its
    # arrays of other lengths
    toks = kv(g, "tokenizer.ggml.tokens")
    if toks:
        ntok = len(toks.value)
        for n in (0, 1, ntok + 1, ntok * 4):
            h = clone(g)
            tk = kv(h, "tokenizer.ggml.tokens")
            tk.value = (tk.value * 5)[:n] if n > ntok else tk.value[:n]
            if n > ntok:
                tk.value = tk.value[:ntok] + ["<x%d>" % i for i in range(n - ntok)]
            for other in ("tokenizer.ggml.token_type", "tokenizer.ggml.scores"):
                o = kv(h, other)
                if o:
                    o.value = (o.value + o.value[:1] * n)[:n]
            yield "tokens=%d" % n, h.write()[0], ["tokenizer.ggml.tokens", "token_embd"], n > ntok or n < 3
        for other in ("tokenizer.ggml.token_type", "tokenizer.ggml.merges"):
            o = kv(g, other)
            if not o:
                continue
            for n in (0, 1, len(o.value) - 1, len(o.value) + 1):
                h = clone(g)
                oo = kv(h, other)
                oo.value = (oo.value + oo.value[:1])[:n]
                yield "%s len=%d" % (other, n), h.write()[0], [other], other.endswith("type") and n != ntok
        ty = kv(g, "tokenizer.ggml.token_type")
        if ty:
            for v in (-1, 7, 1 << 30):
                h = clone(g)
                kv(h, "tokenizer.ggml.token_type").value[0] = v
                yield "token_type[0]=%d" % v, h.write()[0], ["tokenizer.ggml.token_type"], False
        mg = kv(g, "tokenizer.ggml.merges")
        if mg:
            for v in ("", "a", "a b c", " ", "\xff\xfe b", "zz yy"):
                h = clone(g)
                kv(h, "tokenizer.ggml.merges").value[0] = v
                yield "merges[0]=%r" % v, h.write()[0], ["tokenizer.ggml.merges"], False
        for v in ("", "\x00", "a" * 70000, "<|im_start|>" * 3):
            h = clone(g)
            kv(h, "tokenizer.ggml.tokens").value[ntok // 2] = v
            yield "tokens[n/2]=%r" % v[:12], h.write()[0], ["tokenizer.ggml.tokens"], False
    # the chat template
    for v in ("{% for %}", "{{" * 1000, "{% if x %}" * 200, ""):
        h = clone(g)
        k0 = kv(h, "tokenizer.chat_template")
        if k0:
            k0.value = v
            yield "chat_template=%r" % v[:12], h.write()[0], ["tokenizer.chat_template", "template"], False
    # every tensor: dims, type, offset, name
    for ti, t in enumerate(g.tensors):
        if not full and ti % 5:
            continue
        nm = t.name
        for d in range(len(t.ne)):
            for v in ([0, 1, 2, t.ne[d] + 1, t.ne[d] * 2, 1 << 31, 1 << 32, 1 << 40, 1 << 41, (1 << 63),
                       (1 << 64) - 1] if full else [0, t.ne[d] * 2, 1 << 40, (1 << 64) - 1]):
                if v == t.ne[d]:
                    continue
                yield "%s ne[%d]=%d" % (nm, d, v), patch("<Q", at["ne%d:%s" % (d, nm)], v), [nm], True
        for v in ([0, 3, 5, 16, 31, 39, 40, 1 << 31, (1 << 32) - 1] if full else [4, 39, (1 << 32) - 1]):
            if v == t.type:
                continue
            yield "%s type=%d" % (nm, v), patch("<I", at["ttype:" + nm], v), [nm], False
        for v in (t.offset + 1, t.offset + g.align, len(g.data), (1 << 63), (1 << 64) - g.align):
            yield "%s offset=%d" % (nm, v), patch("<Q", at["toff:" + nm], v), [nm], v != t.offset + g.align
        for v in (0, 3, 5, (1 << 32) - 1):
            if v != len(t.ne):
                yield "%s n_dims=%d" % (nm, v), patch("<I", at["ndims:" + nm], v), [nm] + hdr, True
        for v in (0, 1 << 30, (1 << 64) - 1):
            yield "%s namelen=%d" % (nm, v), patch("<Q", at["tname:" + nm], v), hdr + ["tensor"], True
        if full or ti == 0:
            h = clone(g)
            h.tensors = [x for x in h.tensors if x.name != nm]
            yield "-%s" % nm, h.write()[0], [nm, "block_count", "offset"], True
            h = clone(g)
            h.tensors[ti].offset = h.tensors[0].offset if ti else h.tensors[-1].offset
            yield "%s aliases" % nm, h.write()[0], [nm], False
    # a tensor twice, and a layer past block_count
    h = clone(g)
    h.tensors.append(Tensor(g.tensors[1].name, g.tensors[1].ne, g.tensors[1].type, g.tensors[1].offset))
    yield "duplicate tensor", h.write()[0], [g.tensors[1].name], True
    h = clone(g)
    t = g.tensors[-1]
    h.tensors.append(Tensor("blk.99.attn_norm.weight", [t.ne[0]], 0, 0))
    yield "blk.99", h.write()[0], ["block_count", "blk.99"], True


def run(cmd, env, timeout, rlimit_as):
    def lim():
        os.setsid()
        if rlimit_as:
            resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=lim)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out.decode("utf-8", "replace")
    return p.returncode, out.decode("utf-8", "replace")


def judge(rc, out, fname, fields, must):
    if SAN.search(out):
        return "sanitizer: " + SAN.search(out).group(0)
    if rc is None:
        return "hang"
    if rc < 0 or rc >= 128:
        return "signal %d" % (-rc if rc < 0 else rc - 128)
    if rc == 0 and not must:
        return ""
    if rc != 2:
        return "exit %d" % rc
    if fname not in out:
        return "message does not name the file"
    if not any(f in out for f in fields):
        return "message names none of %s" % " / ".join(fields[:4])
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("crucible")
    ap.add_argument("mk_bases")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--asan", action="store_true")
    ap.add_argument("--report")
    ap.add_argument("--keep")
    ap.add_argument("--arch", default="")
    ap.add_argument("--count", action="store_true")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="crucible-badgguf-")
    if a.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "max_allocation_size_mb=4096:allocator_may_return_null=0")
    env["UBSAN_OPTIONS"] = env.get("UBSAN_OPTIONS", "print_stacktrace=1")
    rlimit = None if a.asan else 8 << 30
    subprocess.run([a.mk_bases, work], check=True)
    def all_jobs():
        for f in sorted(os.listdir(work)):
            arch = f[:-5]
            if not f.endswith(".gguf") or (a.arch and arch not in a.arch.split(",")):
                continue
            with open(os.path.join(work, f), "rb") as fh:
                g = GGUF(fh.read())
            for i, (suffix, data, fields, must) in enumerate(mutations(arch, g, a.full)):
                name = "%s_%d.gguf" % (arch, i)
                # the quick sample: a fixed sixth of them, every family in it
                if a.full or zlib.crc32(name.encode()) % 6 == 0:
                    yield (name, arch, suffix, data, fields, must)
    if a.count:
        print("%d inputs" % sum(1 for _ in all_jobs()))
        return 0
    results = []
    n_jobs = 0

    def one(j):
        name, arch, suffix, data, fields, must = j
        p = os.path.join(work, "m", name)
        with open(p, "wb") as fh:
            fh.write(data)
        cmd = [a.crucible, "decode", "--model", p, "--prompt", "hi <|im_start|>", "--max-tokens", "2",
               "--device", "cpu", "--threads", "1"]
        rc, out = run(cmd, env, a.timeout, rlimit)
        v = judge(rc, out, name, fields, must)
        r = [(name, arch, suffix, "decode", rc, v, out)]
        # the chat path and the candidate writer on a sample of those that load
        if rc == 0 and zlib.crc32(name.encode()) % 16 == 0:
            od = p + ".out"
            rc2, out2 = run([a.crucible, "generate", "--model", p, "--tasks", "smoke/relu", "--n", "1",
                             "--max-tokens", "4", "--device", "cpu", "--threads", "1", "--out", od],
                            env, a.timeout, rlimit)
            r.append((name, arch, suffix, "generate", rc2, judge(rc2, out2, name, fields, False), out2))
            shutil.rmtree(od, ignore_errors=True)
        os.unlink(p)
        return r
    os.makedirs(os.path.join(work, "m"), exist_ok=True)
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        pending = set()
        for j in all_jobs():
            n_jobs += 1
            pending.add(ex.submit(one, j))
            if len(pending) >= 2 * a.jobs:
                done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for d in done:
                    results += d.result()
        for d in pending:
            results += d.result()
    bad = [r for r in results if r[5]]
    for r in bad:
        print("FAIL %s [%s: %s] %s: %s -- %s" % (r[0], r[1], r[2], r[3], r[5], " ".join(r[6].split())[-400:]))
    if a.report:
        import csv
        with open(a.report, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["name", "arch", "mutation", "command", "rc", "verdict", "message"])
            for r in results:
                w.writerow([r[0], r[1], r[2], r[3], r[4], r[5] or "ok", " ".join(r[6].split())[-300:]])
    n_ok0 = sum(1 for r in results if r[3] == "decode" and r[4] == 0)
    print("gguf: %d inputs, %d failed, %d accepted as valid" % (n_jobs, len({r[0] for r in bad}), n_ok0))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
