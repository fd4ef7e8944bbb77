#!/usr/bin/env python3
"""usage: stall_trace.py OUTDIR [FRAMES]: reads what stall_trace.sh wrote (trace.log with two marks, maps,
a.smaps, b.smaps) and prints the smaps growth per mapping, heap live per thread at the marks and its peak
between, and the allocations live at the second mark that were not at the first, by call site
(symbolized with addr2line and swift-demangle; FRAMES frames of each stack are kept, default 8)."""
import sys, collections, subprocess, re
d = sys.argv[1]
def smaps(path):
    m = {}; cur = None
    for line in open(path):
        if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
            f = line.split(); cur = (f[0], f[1], f[5] if len(f) > 5 else '[anon]'); m[cur] = 0
        elif line.startswith('Rss:'):
            m[cur] = int(line.split()[1])
    return m
a_s, b_s = smaps(d + '/a.smaps'), smaps(d + '/b.smaps')
total = 0
print("== smaps Rss growth per mapping (KiB)")
for k in sorted(set(a_s) | set(b_s)):
    delta = b_s.get(k, 0) - a_s.get(k, 0)
    if delta:
        print(f"{delta:6d} KiB  {k[0]} {k[1]} {k[2]}"); total += delta
print("total", total)
marks = []
events = []
for line in open(d + '/trace.log'):
    f = line.split()
    if f[0] == 'mark': marks.append(int(f[1])); continue
    events.append(f)
A, B = marks[0], marks[1]
# maps for symbolization
maps = []
for line in open(d + '/maps'):
    f = line.split()
    if len(f) > 5 and 'x' in f[1]:
        lo, hi = [int(x, 16) for x in f[0].split('-')]
        maps.append((lo, hi, int(f[2], 16), f[5]))
# base of each file = lowest mapping start - its offset
bases = {}
for line in open(d + '/maps'):
    f = line.split()
    if len(f) > 5:
        lo = int(f[0].split('-')[0], 16); off = int(f[2], 16)
        b = lo - off
        if f[5] not in bases or b < bases[f[5]]: bases[f[5]] = b
symcache = {}
def syms(pcs):
    out = []
    for pc in pcs:
        a = int(pc, 16)
        for lo, hi, off, name in maps:
            if lo <= a < hi:
                out.append((name, a - bases[name])); break
        else:
            out.append(('?', a))
    return out
def symbolize(pairs):
    need = collections.defaultdict(set)
    for name, off in pairs:
        if (name, off) not in symcache and name != '?': need[name].add(off)
    for name, offs in need.items():
        offs = sorted(offs)
        r = subprocess.run(['addr2line', '-f', '-e', name] + [hex(o - 1) for o in offs], capture_output=True, text=True).stdout.split('\n')
        dm = subprocess.run(['swift-demangle', '--simplified', '--compact'], input='\n'.join(r[0::2]), capture_output=True, text=True).stdout.split('\n')
        for i, o in enumerate(offs):
            s = dm[i] if i < len(dm) else '?'
            if s == '??': s = name.split('/')[-1] + '+' + hex(o)
            symcache[(name, o)] = s[:110]
    return [symcache.get(p, p[0].split('/')[-1] + '+' + hex(p[1])) for p in pairs]

live = {}  # ptr -> (tid, size, pcs, t)
snap = {}
peak = collections.Counter(); cur = collections.Counter()
after_A_allocs = []
for f in events:
    op, tid, t, ptr, size, old = f[0], f[1], int(f[2]), f[3], int(f[4]), f[5]
    if 'A' not in snap and t >= A: snap['A'] = dict(live)
    if 'B' not in snap and t >= B: snap['B'] = dict(live)
    if op == 'f':
        if ptr in live:
            cur[live[ptr][0]] -= live[ptr][1]; del live[ptr]
        continue
    if op == 'r' and old != '0' and old in live:
        cur[live[old][0]] -= live[old][1]; del live[old]
    live[ptr] = (tid, size, f[6:], t)
    cur[tid] += size
    if A <= t < B:
        peak[tid] = max(peak[tid], cur[tid])
        after_A_allocs.append((tid, size, f[6:], t))
if 'B' not in snap: snap['B'] = dict(live)
a, b = snap['A'], snap['B']
print("events", len(events), "allocs between A and B:", len(after_A_allocs))
def tot(s, tid): return sum(v[1] for v in s.values() if v[0] == tid)
tids = sorted(set(v[0] for v in a.values()) | set(v[0] for v in b.values()))
for tid in tids:
    print(f"thread {tid}: live at A {tot(a,tid)} B {tot(b,tid)}  peak between {peak.get(tid,0)}")
print("== live at B, not at A (allocated after A):")
grp = collections.defaultdict(lambda: [0, 0])
for p, v in b.items():
    if p not in a or a[p] != v:
        key = (v[0], tuple(v[2][:int(sys.argv[2]) if len(sys.argv) > 2 else 8]))
        grp[key][0] += 1; grp[key][1] += v[1]
rows = sorted(grp.items(), key=lambda kv: -kv[1][1])
for (tid, pcs), (n, sz) in rows:
    names = symbolize(syms(pcs))
    names = [x for x in names if not re.search(r'malloc|swift_slowAlloc|swift_allocObject|libswiftCore.so\+', x)]
    print(f"{sz:8d} B in {n:3d}  tid {tid}  " + " <- ".join(names[:5]))
print("== freed between A and B (live at A, gone at B):")
gone = collections.defaultdict(lambda: [0, 0])
for p, v in a.items():
    if p not in b:
        key = (v[0], tuple(v[2][:8])); gone[key][0] += 1; gone[key][1] += v[1]
for (tid, pcs), (n, sz) in sorted(gone.items(), key=lambda kv: -kv[1][1])[:15]:
    names = [x for x in symbolize(syms(pcs)) if not re.search(r'malloc|swift_slowAlloc|swift_allocObject|libswiftCore.so\+', x)]
    print(f"{sz:8d} B in {n:3d}  tid {tid}  " + " <- ".join(names[:4]))
print("== all allocations between A and B by size (sum), incl. freed:")
g2 = collections.defaultdict(lambda: [0, 0, 0])
for tid, size, pcs, t in after_A_allocs:
    key = (tid, tuple(pcs[:8])); g2[key][0] += 1; g2[key][1] += size; g2[key][2] = max(g2[key][2], size)
for (tid, pcs), (n, sz, mx) in sorted(g2.items(), key=lambda kv: -kv[1][1])[:25]:
    names = [x for x in symbolize(syms(pcs)) if not re.search(r'malloc|swift_slowAlloc|swift_allocObject|libswiftCore.so\+', x)]
    print(f"{sz:9d} B in {n:5d} (max {mx:6d}) tid {tid}  " + " <- ".join(names[:4]))
