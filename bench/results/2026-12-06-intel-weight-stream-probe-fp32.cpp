#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <sys/mman.h>
static double tcpu(){timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
const int64_t K=2048; int64_t N; float* W; float* X; float* out;
// MR x rows, 4 W rows (fp32 weights)
template<int MR,int HINT,int AHEAD> void tile(){ for(int64_t n=0;n<N;n+=4){ __m512 a[MR][4]; for(int m=0;m<MR;m++)for(int r=0;r<4;r++)a[m][r]=_mm512_setzero_ps();
 const float* w=W+n*K; const char* ahead=(const char*)w+AHEAD;
 for(int64_t c=0;c<K;c+=16){ if(AHEAD>0) for(int l=0;l<4*16*4;l+=64)_mm_prefetch(ahead+c*16+l,(_mm_hint)HINT);
  __m512 wc[4]; for(int r=0;r<4;r++)wc[r]=_mm512_loadu_ps(w+r*K+c);
  for(int m=0;m<MR;m++){__m512 x=_mm512_loadu_ps(X+m*K+c); for(int r=0;r<4;r++)a[m][r]=_mm512_fmadd_ps(x,wc[r],a[m][r]);}}
 for(int m=0;m<MR;m++)for(int r=0;r<4;r++)out[m*N+n+r]=_mm512_reduce_add_ps(a[m][r]);}}
template<int S,int HINT,int AHEAD> void streams(){ int64_t q=N/S; for(int64_t n=0;n<q;n++){ __m512 a[S]; for(int s=0;s<S;s++)a[s]=_mm512_setzero_ps();
  for(int64_t c=0;c<K;c+=16){ __m512 x0=_mm512_loadu_ps(X+c);
   for(int s=0;s<S;s++){ const float* w=W+(n+s*q)*K+c; if(AHEAD>0)_mm_prefetch((const char*)w+AHEAD,(_mm_hint)HINT); a[s]=_mm512_fmadd_ps(x0,_mm512_loadu_ps(w),a[s]);} }
  for(int s=0;s<S;s++) out[n+s*q]=_mm512_reduce_add_ps(a[s]); } }
template<class F> void run(const char* name,F f,int reps){ double best=0; for(int r=0;r<reps;r++){double c0=tcpu(); f(); double c=tcpu()-c0; double gbs=N*K*4/c/1e9; if(gbs>best)best=gbs;} printf("%-30s best %6.2f GB/s\n",name,best);}
int main(){ int64_t bytes=1024ll<<20; N=bytes/(K*4); N=N/48*48;
 W=(float*)aligned_alloc(2<<20,N*K*4); madvise(W,N*K*4,MADV_HUGEPAGE); for(int64_t i=0;i<N*K;i++)W[i]=1.0f+(i&7);
 X=(float*)aligned_alloc(64,6*K*4); for(int i=0;i<6*K;i++)X[i]=1.0f/(i+1); out=(float*)aligned_alloc(64,6*N*4);
 for(int round=0;round<2;round++){
 run("fp32 M1 tile nta32K (current)",[]{tile<1,_MM_HINT_NTA,32768>();},3);
 run("fp32 M1 tile t1 4K",[]{tile<1,_MM_HINT_T1,4096>();},3);
 run("fp32 M1 streams6 t0 512",[]{streams<6,_MM_HINT_T0,512>();},3);
 run("fp32 M1 streams6 none",[]{streams<6,_MM_HINT_T0,0>();},3);
 run("fp32 M4 tile nta32K (current)",[]{tile<4,_MM_HINT_NTA,32768>();},3);
 run("fp32 M4 tile t1 4K",[]{tile<4,_MM_HINT_T1,4096>();},3);
 run("fp32 M4 tile none",[]{tile<4,_MM_HINT_T0,0>();},3);
 run("fp32 M4 tile t0 1K",[]{tile<4,_MM_HINT_T0,1024>();},3);
 }}
