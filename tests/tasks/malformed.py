#!/usr/bin/env python3
"""malformed.py — issue 30's malformed-input replay for task files and
candidate directives: structured mutations of the registry's own files, each
run through crucible, checked for exit 2 (a task) or a format_error (a
candidate, SPEC §4) with a message naming the file and the field, and for no
sanitizer report, no signal, no hang.

usage: malformed.py CRUCIBLE [--full] [--kind tasks,cand] [--jobs N]
                    [--timeout S] [--keep DIR] [--report CSV]

Without --full: a fixed sample that runs in seconds on a release build (the
test suite's `malformed_tasks`); --full: every mutation of a base task per
op of the registry (the issue's replay, meant for an ASan+UBSan build).
Needs CRUCIBLE_DATADIR (the registry). Exit 0 when every input passes."""
import argparse
import concurrent.futures as cf
import copy
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

SAN = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")
# values a number of a task file is set to
NUMS = [0, -1, 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, -2**63, 2**64, 1.5, "x", None]
NUMS_QUICK = [0, -1, 2**32 + 1, 2**63 - 1, 1.5, None]
# attributes an op may read, added to every op with these values
ATTR_VALS = [0, -1, 2**40, 2**62, -2**63, [0, 0], [-1, 2**62], "x", 1.5]


class Case:
    def __init__(self, kind, name, why, fields, must_fail=True):
        self.kind, self.name, self.why, self.fields, self.must_fail = kind, name, why, fields, must_fail
        self.results = []  # (command, rc, verdict)


def run(cmd, env, timeout, rlimit_as):
    """(rc, output, max RSS in KiB, seconds); rc -SIG on a signal, None on a hang."""
    def lim():
        os.setsid()
        if rlimit_as:
            resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))
    t0 = time.time()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=lim)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out.decode("utf-8", "replace"), 0, time.time() - t0
    return p.returncode, out.decode("utf-8", "replace"), 0, time.time() - t0


def judge(case, rc, out, fname, want_rc=(2,), ok_rc=(0,)):
    """'' when the outcome is right, else what is wrong."""
    if SAN.search(out):
        return "sanitizer: " + SAN.search(out).group(0)
    if rc is None:
        return "hang"
    if rc < 0 or rc >= 128:
        return "signal %d" % (-rc if rc < 0 else rc - 128)
    if rc in ok_rc and not case.must_fail:
        return ""
    if rc not in want_rc:
        return "exit %d" % rc
    if fname not in out:
        return "message does not name the file"
    if not any(f in out for f in case.fields):
        return "message names none of %s" % "/".join(case.fields)
    return ""


# ---- task files -------------------------------------------------------------

def leaves(doc):
    """(path, value, field names a message may use) of every number and
    shape entry of a task."""
    out = []
    for key in ("dims", "cpu_dims"):
        for d, v in doc.get(key, {}).items():
            out.append(((key, d), v, [key]))
    for i, cd in enumerate(doc.get("check_dims", [])[:2]):
        for d, v in cd.items():
            out.append((("check_dims", i, d), v, ["check_dims[%d]" % i]))
    for tn, t in doc.get("tensors", {}).items():
        for k, v in enumerate(t.get("shape", [])):
            out.append((("tensors", tn, "shape", k), v, ["tensors.%s" % tn]))
    for n, node in enumerate(doc.get("graph", [])):
        for a, v in node.items():
            if a in ("op", "in", "out"):
                continue
            if isinstance(v, list):
                for k in range(len(v)):
                    out.append((("graph", n, a, k), v[k], ["graph[%d]" % n]))
            else:
                out.append((("graph", n, a), v, ["graph[%d]" % n]))
    for k in ("atol", "rtol"):
        if k in doc.get("tolerance", {}):
            out.append((("tolerance", k), doc["tolerance"][k], ["tolerance"]))
    return out


def put(doc, path, v):
    d = doc
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = v


def drop(doc, path):
    d = doc
    for p in path[:-1]:
        d = d[p]
    del d[path[-1]]


def task_mutations(base, doc, ops, attrs, full, mine):
    """(suffix, new doc or raw text, fields, must_fail, why). mine: the ops
    this base stands for (its graph's first node of each)."""
    nums = NUMS if full else NUMS_QUICK
    nodes, seen_ops = [], set()
    for n, node in enumerate(doc["graph"]):
        if node["op"] in mine and node["op"] not in seen_ops:
            seen_ops.add(node["op"])
            nodes.append(n)
    tensors3 = list(doc["tensors"])[:3]
    for path, v0, fields in leaves(doc):
        if path[0] == "graph" and path[1] not in nodes:
            continue
        if path[0] == "tensors" and path[1] not in tensors3:
            continue
        for v in nums:
            if v == v0:
                continue
            d = copy.deepcopy(doc)
            put(d, path, v)
            # a dim that stays positive and small may be valid; a bad
            # attribute value may be one the op ignores
            must = not (isinstance(v, int) and 1 <= v <= 2**34 and path[0] != "graph") and \
                path[0] not in ("graph", "tolerance")
            if path[0] == "tolerance":
                must = not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1)
            # a bench dim the shapes do not use ... every dim is used: must
            # stays; a literal extent in range may be consistent
            if path[0] == "tensors" and isinstance(v, int) and 1 <= v <= 2**34:
                must = False
            f = fields + (["dims", "cpu_dims", "check_dims"] if path[0] == "tensors" else [])
            # a dim value that breaks a shape rule is blamed on the op or
            # the tensor that needs it
            if path[0] in ("dims", "cpu_dims", "check_dims"):
                f = f + ["tensors.", "graph["]
            if path[0] == "tensors":
                f = f + ["graph["]
            if path[0] == "graph":  # a later op may be the one that cannot take it
                f = ["graph["]
            yield "%s=%s" % (".".join(map(str, path)), json.dumps(v)), d, f, must, "set"
    # strings in shapes: undefined dims and expressions
    for tn, t in doc["tensors"].items():
        for k in range(len(t["shape"])):
            for v in (["ZZ", "B*2", "", "N+1"] if full else ["ZZ", "B*2"]):
                d = copy.deepcopy(doc)
                d["tensors"][tn]["shape"][k] = v
                if v in d.get("dims", {}):
                    continue
                yield "tensors.%s.shape.%d=%s" % (tn, k, json.dumps(v)), d, ["tensors.%s" % tn], True, "undefined dim"
        if not full:
            break
    # missing fields
    for k in list(doc):
        if k in ("description", "source", "notes", "repair", "flops", "bytes", "tolerance", "backward"):
            continue
        d = copy.deepcopy(doc)
        del d[k]
        yield "-%s" % k, d, [k], True, "missing"
    for tn in tensors3:
        t = doc["tensors"][tn]
        for k in list(t):
            if k == "grad" or (k == "init" and t.get("role") == "output"):
                continue
            d = copy.deepcopy(doc)
            del d["tensors"][tn][k]
            yield "-tensors.%s.%s" % (tn, k), d, ["tensors.%s" % tn], True, "missing"
    for n in nodes:
        for k in list(doc["graph"][n]):
            d = copy.deepcopy(doc)
            del d["graph"][n][k]
            yield "-graph.%d.%s" % (n, k), d, ["graph["], k in ("op", "in", "out"), "missing"
    for ck in ("cpu_dims",) + (("check_dims",) if full else ()):
        dd = doc[ck] if ck == "cpu_dims" else doc[ck][0]
        for dn in list(dd)[:1]:
            d = copy.deepcopy(doc)
            drop(d, (ck, dn) if ck == "cpu_dims" else (ck, 0, dn))
            yield "-%s.%s" % (ck, dn), d, [ck], True, "missing dim"
    # huge arrays and objects
    d = copy.deepcopy(doc)
    d["check_dims"] = [doc["check_dims"][0]] * 100000
    yield "check_dims*100000", d, ["check_dims"], True, "huge array"
    t0 = next(iter(doc["tensors"]))
    for n in (7, 100000):
        d = copy.deepcopy(doc)
        d["tensors"][t0]["shape"] = [1] * n
        yield "tensors.%s.shape*%d" % (t0, n), d, ["tensors.%s" % t0], True, "huge array"
    d = copy.deepcopy(doc)
    d["graph"] = doc["graph"] * (3000 // len(doc["graph"]) + 1)
    yield "graph*3000", d, ["graph"], True, "huge array"
    d = copy.deepcopy(doc)
    d["graph"][0]["in"] = d["graph"][0]["in"] * 1000
    yield "graph.0.in*1000", d, ["graph[0]"], True, "huge array"
    d = copy.deepcopy(doc)
    for i in range(600):
        d["tensors"]["extra%d" % i] = {"role": "input", "dtype": "f32", "shape": [1], "init": "normal"}
    yield "tensors+600", d, ["tensors"], True, "huge object"
    d = copy.deepcopy(doc)
    for i in range(20):
        d["dims"]["X%d" % i] = 2
    yield "dims+20", d, ["dims"], True, "huge object"
    d = copy.deepcopy(doc)
    d["graph"][0]["attrs%d" % 0] = list(range(100000))
    yield "graph.0.list*100000", d, ["graph[0]"], True, "huge array"
    # inits naming dims that do not exist, and literal fan-ins out of range
    for tn, t in doc["tensors"].items():
        if t.get("role") == "output" or t.get("dtype", "f32") not in ("f32", "f16", "bf16"):
            continue
        for v in ("indices[0,ZZ)", "kaiming(ZZ)", "kaiming(99999999999999999999)", "kaiming(0)",
                  "kaiming(-1)", "normal(0,-1)", "uniform(1,0)", "normal(1e999,1)", ""):
            d = copy.deepcopy(doc)
            d["tensors"][tn]["init"] = v
            must = True
            yield "tensors.%s.init=%s" % (tn, v), d, ["tensors.%s" % tn], must, "init"
        break
    # attributes every op might read, on each distinct op of the graph
    for n in nodes:
        for a in attrs.get(doc["graph"][n]["op"], []) + ["stride", "dim"]:
            for v in ATTR_VALS if full else [0, -1, 2**62]:
                d = copy.deepcopy(doc)
                d["graph"][n][a] = v
                yield "graph.%d.%s=%s" % (n, a, json.dumps(v)), d, ["graph["], False, "attr"
    # every op in place of each distinct op (shape rules on what they do
    # not expect)
    if full:
        for n in nodes:
            for op in ops:
                if op == doc["graph"][n]["op"]:
                    continue
                d = copy.deepcopy(doc)
                d["graph"][n]["op"] = op
                yield "graph.%d.op=%s" % (n, op), d, ["graph["], False, "op swap"
    # text that is not JSON, or not a task
    yield "truncated", json.dumps(doc)[:len(json.dumps(doc)) // 2], ["json", ":"], True, "truncated"
    yield "array", "[]", ["top level"], True, "not an object"
    yield "bigint", json.dumps(doc).replace(json.dumps(doc["dims"]), json.dumps(
        {k: 10**30 for k in doc["dims"]}), 1), [":"], True, "big integer"


def base_tasks(datadir, full):
    """One task per op of the registry (the smallest that has it), or the
    smoke set and a few shape-heavy ops for the quick sample."""
    use, ops, attrs = {}, set(), {}
    for s in sorted(os.listdir(os.path.join(datadir, "tasks"))):
        sd = os.path.join(datadir, "tasks", s)
        for f in sorted(os.listdir(sd)):
            if not f.endswith(".json"):
                continue
            p = os.path.join(sd, f)
            with open(p) as fh:
                txt = fh.read()
            doc = json.loads(txt)
            for node in doc["graph"]:
                ops.add(node["op"])
                al = attrs.setdefault(node["op"], [])
                al += [k for k in node if k not in ("op", "in", "out") and k not in al]
                if node["op"] not in use or len(txt) < use[node["op"]][0]:
                    use[node["op"]] = (len(txt), p)
    want = sorted(use) if full else ["conv", "conv_transpose", "maxpool", "matmul", "softmax"]
    bases = {}
    for o in want:
        bases.setdefault(use[o][1], set()).add(o)
    return bases, sorted(ops), attrs


def task_cases(datadir, work, full):
    bases, ops, attrs = base_tasks(datadir, full)
    os.makedirs(os.path.join(work, "data", "tasks", "m"))
    os.symlink(os.path.join(datadir, "baselines"), os.path.join(work, "data", "baselines"))
    cases = []
    for b, mine in sorted(bases.items()):
        with open(b) as fh:
            doc = json.load(fh)
        stem = os.path.basename(b)[:-5]
        for i, (suffix, d, fields, must, why) in enumerate(task_mutations(b, doc, ops, attrs, full, mine)):
            name = "%s__%d" % (re.sub(r"[^A-Za-z0-9_]", "_", stem)[:40], i)
            with open(os.path.join(work, "data", "tasks", "m", name + ".json"), "w") as fh:
                fh.write(d if isinstance(d, str) else json.dumps(d))
            c = Case("task", name, "%s %s: %s" % (os.path.basename(b), why, suffix), fields, must)
            cases.append(c)
    return cases


def task_check(c, exe, env, work, timeout, rlimit, full):
    """list m/NAME: exit 2 naming the file and the field, or (a mutation that
    may be valid) 0; then dump (the reference on it) and, for a broken task,
    check of a candidate that names it."""
    fname = c.name + ".json"
    rc, out, _, _ = run([exe, "list", "m/" + c.name], env, timeout, rlimit)
    v = judge(c, rc, out, fname)
    c.results.append(("list", rc, v, out))
    if v:
        return
    dd = os.path.join(work, "dump", c.name)
    os.makedirs(os.path.dirname(dd), exist_ok=True)
    rc2, out2, _, _ = run([exe, "dump", "m/" + c.name, "--out", dd], env, timeout, rlimit)
    v2 = judge(c, rc2, out2, fname, ok_rc=(0,) if rc == 0 else ())
    if rc == 0 and rc2 == 2 and not v2:
        v2 = ""
    c.results.append(("dump", rc2, v2, out2))
    shutil.rmtree(dd, ignore_errors=True)
    if rc == 2 and full and zlib.crc32(c.name.encode()) % 8 == 0:
        cand = os.path.join(work, "cand", c.name + ".c")
        with open(cand, "w") as fh:
            fh.write("// @task m/%s\n// @forward f(x)\nvoid f(float *x) { (void)x; }\n" % c.name)
        rc3, out3, _, _ = run([exe, "check", cand, "--no-timing"], env, timeout, rlimit)
        c.results.append(("check", rc3, judge(c, rc3, out3, fname), out3))


# ---- candidates -------------------------------------------------------------

CAND_BASE = "smoke/softmax_plain.c"


def cand_mutations(src, full):
    """(suffix, text, must name) of the directive header of a candidate."""
    lines = src.split("\n")
    ti = next(i for i, l in enumerate(lines) if "@task" in l)
    fi = next(i for i, l in enumerate(lines) if "@forward" in l)

    def with_line(i, new):
        l2 = list(lines)
        l2[i] = new
        return "\n".join(l2)

    def add_line(new):
        l2 = list(lines)
        l2.insert(fi + 1, new)
        return "\n".join(l2)
    for v in ("", "smoke/nope", "../etc/passwd", "smoke/" + "a" * 1000, "smoke", "/x", "smoke/softmax extra"):
        yield "@task=" + v[:20], with_line(ti, "// @task " + v)
    yield "-@task", with_line(ti, "")
    yield "@task*2", add_line("// @task smoke/softmax")
    yield "-@forward", with_line(fi, "")
    exprs = ["B*B*B*B*B*B*B*B*B*B", "B/0", "B%0", "cdiv(B,0)", "(-9223372036854775807-1)/-1",
             "99999999999999999999", "-9223372036854775808", "9223372036854775807+B", "min(B)",
             "max(B,D,1)", "(" * 10000 + "B" + ")" * 10000, "-" * 10000 + "B", "B*", "", "ZZ",
             "B D", "1.5", "0x10", "B-9223372036854775807-2", "4611686018427387904*2", "D*-1"]
    if not full:
        exprs = exprs[:8] + exprs[10:12]
    for e in exprs:
        yield "@forward arg=%s" % e[:24], with_line(fi, "// @forward softmax_fwd(x, y, %s, D)" % e)
        yield "@scratch=%s" % e[:24], add_line("// @scratch s f32[%s]" % e)
    for v in ("softmax_fwd(x, y, B, D", "softmax_fwd x, y", "(x)", "softmax_fwd()",
              "softmax_fwd(" + ", ".join(["x"] * 1200) + ")", "a" * 100 + "(x)",
              "softmax_fwd(x, y, B, D)" + " " * 70000, "softmax_fwd<<<B, 0>>>(x, y, B, D)",
              "softmax_fwd<<<0, 1>>>(x, y, B, D)", "softmax_fwd<<<(1,1,1,1), 1>>>(x, y, B, D)",
              "softmax_fwd(zz, y, B, D)", "softmax_fwd(x, x, B, D)", "softmax_fwd(1e999, y, B, D)"):
        yield "@forward=%s" % v[:24], with_line(fi, "// @forward " + v)
    for v in ("s f32[-1]", "s f32[0]", "s q8[4]", "s f32", "s f32[4611686018427387904]",
              "s f32[B*D*B*D]", "x f32[4]", "s f32[4] extra", "s" * 100 + " f32[4]"):
        yield "@scratch=%s" % v[:24], add_line("// @scratch " + v)
    l2 = list(lines)
    for k in range(70):
        l2.insert(fi + 1, "// @scratch s%d f32[4]" % k)
    yield "@scratch*70", "\n".join(l2)
    l2 = list(lines)
    for k in range(2100):
        l2.insert(fi + 1, "// @forward softmax_fwd(x, y, B, D)")
    yield "@forward*2100", "\n".join(l2)
    for v in ("@dims B=4", "@dims B=-1,D=99999999999999999999", "@backward", "@unknown x", "@"):
        yield "%s" % v[:24], add_line("// " + v)


def cand_cases(datadir, work, full):
    with open(os.path.join(datadir, "candidates", CAND_BASE)) as fh:
        src = fh.read()
    os.makedirs(os.path.join(work, "cands"), exist_ok=True)
    cases = []
    for i, (suffix, text) in enumerate(cand_mutations(src, full)):
        name = "cand%d" % i
        with open(os.path.join(work, "cands", name + ".c"), "w") as fh:
            fh.write(text)
        cases.append(Case("cand", name, suffix, ["%s.c:" % name], True))
    return cases


def cand_check(c, exe, env, work, timeout, rlimit, full):
    """check: a malformed header is a format_error naming the file and the
    line (exit 1), or a bad task name an input error (exit 2); never a crash."""
    p = os.path.join(work, "cands", c.name + ".c")
    rc, out, _, _ = run([exe, "check", p, "--no-timing"], env, timeout, rlimit)
    # a header that parses may still be a wrong call (a literal that
    # crashes the candidate, an alias): any verdict, but a format_error
    # names the file and the line
    c.must_fail = False
    v = judge(c, rc, out, c.name + ".c", ok_rc=(0, 1, 2))
    if not v and rc != 0 and c.name + ".c" not in out:
        v = "the message does not name the file"
    if not v and "format_error" in out and not re.search(re.escape(c.name) + r"\.c:\d+", out):
        v = "format_error without FILE:LINE"
    c.results.append(("check", rc, v, out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("crucible")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--kind", default="tasks,cand")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--keep")
    ap.add_argument("--report")
    ap.add_argument("--count", action="store_true", help="only generate and count")
    ap.add_argument("--asan", action="store_true", help="the build is instrumented: no RLIMIT_AS")
    a = ap.parse_args()
    datadir = os.environ.get("CRUCIBLE_DATADIR")
    if not datadir:
        sys.exit("malformed.py: CRUCIBLE_DATADIR is not set")
    work = a.keep or tempfile.mkdtemp(prefix="crucible-malformed-")
    if a.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    os.makedirs(os.path.join(work, "cand"), exist_ok=True)
    env = dict(os.environ, CRUCIBLE_DATADIR=os.path.join(work, "data"))
    # a huge allocation aborts with a report (instrumented) or fails
    # under 8 GiB of address space (release)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "max_allocation_size_mb=4096:allocator_may_return_null=0")
    env["UBSAN_OPTIONS"] = env.get("UBSAN_OPTIONS", "print_stacktrace=1")
    rlimit = None if a.asan else 8 << 30
    cases, checks = [], []
    kinds = a.kind.split(",")
    if "tasks" in kinds:
        tc = task_cases(datadir, work, a.full)
        cases += tc
        checks += [(c, task_check) for c in tc]
    if "cand" in kinds:
        cenv = dict(env, CRUCIBLE_DATADIR=datadir)
        cc = cand_cases(datadir, work, a.full)
        cases += cc
        checks += [(c, lambda c, e, _env, w, t, r, f: cand_check(c, e, cenv, w, t, r, f)) for c in cc]
    if a.count:
        print("%d inputs" % len(cases))
        return 0
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(lambda cf_: cf_[1](cf_[0], a.crucible, env, work, a.timeout, rlimit, a.full), checks))
    bad = [(c, r) for c in cases for r in c.results if r[2]]
    by = {}
    for c in cases:
        k = c.kind
        by.setdefault(k, [0, 0, 0])
        by[k][0] += 1
        by[k][1] += any(r[2] for r in c.results)
        by[k][2] += any(r[1] == 0 for r in c.results if r[0] in ("list",))
    for c, r in bad:
        msg = " ".join(r[3].split())[-400:]
        print("FAIL %s %s [%s] %s: %s -- %s" % (c.kind, c.name, c.why, r[0], r[2], msg))
    if a.report:
        import csv
        with open(a.report, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["kind", "name", "mutation", "command", "rc", "verdict", "message"])
            for c in cases:
                for r in c.results:
                    w.writerow([c.kind, c.name, c.why, r[0], r[1], r[2] or "ok", " ".join(r[3].split())[-300:]])
    for k, (n, f, valid) in by.items():
        print("%s: %d inputs, %d failed, %d accepted as valid" % (k, n, f, valid))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
