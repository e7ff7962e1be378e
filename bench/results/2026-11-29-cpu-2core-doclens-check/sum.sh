#!/bin/bash
# sum.sh TAG: per-query inclusive instructions by function (2 runs minus 1, / 600), soaked then fresh
python3 - "$1" <<'PY'
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
for k in sorted(s,key=lambda k:-s[k])[:110]:
    print(f"{s[k]:10.0f} {f.get(k,0):10.0f} {k}")
PY
