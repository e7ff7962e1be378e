# Simulation behind untested-or-hist.patch: candidates a query emits over 2,442 tiles of
# ~3,500 matched documents at k = 1000, with a tile publishing only its own k-th best
# (today) against a threshold from a histogram of all tiles candidates so far.
# Scores are i.i.d. sums of 1-3 gamma contributions (a stand-in for OR of dense lists).
# Run: /usr/bin/python3 sim-threshold.py (numpy).
import numpy as np
rng=np.random.default_rng(1)
T=2442; n=3500; k=1000
def tile_scores():
    # OR of ~2.6 dense terms: 1-3 contributions of idf*tf-ish
    m=rng.integers(1,4,size=n)
    s=np.zeros(n)
    for j in range(3):
        s+=np.where(m>j, rng.gamma(2.0,1.0,size=n)*(1+j*0.3),0)
    return s
thr_a=0.0; emit_a=0; sel_a=0
thr_b=0.0; emit_b=0; sel_b=0
edges=np.exp2(np.arange(-20,20,1/8))
hist=np.zeros(len(edges)+1,dtype=np.int64)
for t in range(T):
    s=tile_scores()
    # current rule
    c=s[s>=thr_a]; emit_a+=min(k,len(c)); sel_a+= len(c)>k
    if len(c)>=k: thr_a=max(thr_a,np.sort(c)[-k])
    # histogram rule (+ the tile's own k-th best)
    c=s[s>=thr_b]; emit_b+=min(k,len(c)); sel_b+= len(c)>k
    if len(c)>=k: thr_b=max(thr_b,np.sort(c)[-k])
    b=np.searchsorted(edges,c,side='right')  # bucket index: edges[b-1] <= x < edges[b]
    np.add.at(hist,b,1)
    cum=np.cumsum(hist[::-1])[::-1]  # cum[b] = count in buckets >= b
    ok=np.nonzero(cum>=k)[0]
    if len(ok): 
        bb=ok[-1]
        if bb>0: thr_b=max(thr_b,edges[bb-1])
print("current: emitted",emit_a,"selects",sel_a,"thr",thr_a)
print("hist:    emitted",emit_b,"selects",sel_b,"thr",thr_b)
