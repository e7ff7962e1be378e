#!/bin/bash
# cgrun.sh TAG: callgrind runs of 1 and 2 bench_latency_ms passes on docs_gpuir and docs_fresh; per-query inclusive costs to /tmp/soak/TAG.*.txt
TAG=$1
for idx in docs_gpuir docs_fresh; do for n in 1 2; do
  bash /tmp/soak/cg.sh $idx $n >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 /tmp/soak/cg.$idx.$n.out > /tmp/soak/$TAG.$idx.$n.txt 2>/dev/null
done; done
python3 - "$TAG" <<'PY'
import re,sys
tag=sys.argv[1]
def load(f):
    d={}
    for l in open(f):
        m=re.match(r'\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)',l)
        if m and ":" in m.group(2) and not m.group(2).startswith("=>") and not re.search(r"\([\d,]+x\)",m.group(2)):
            k=m.group(2).split(' [')[0]; k=k.split(':')[-1]
            d[k]=d.get(k,0)+int(m.group(1).replace(',',''))
    return d
out={}
for idx in ['docs_gpuir','docs_fresh']:
    a=load(f'/tmp/soak/{tag}.{idx}.1.txt'); b=load(f'/tmp/soak/{tag}.{idx}.2.txt')
    out[idx]={k:(b[k]-a.get(k,0))/600 for k in b}
s,f=out['docs_gpuir'],out['docs_fresh']
for k in sorted(s,key=lambda k:-s[k])[:45]:
    print(f"{s[k]:10.0f} {f.get(k,0):10.0f} {k}")
PY
