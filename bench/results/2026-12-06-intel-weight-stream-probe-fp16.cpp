#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#include <sys/mman.h>
static double tcpu(){timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double twall(){timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
const int64_t K=2048; int64_t N;
uint16_t* W; float* X; float* out;
static inline __m512 ld(const uint16_t* p){return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p));}
// read-only stream baseline
float readsum(){ __m512 a0=_mm512_setzero_ps(),a1=a0,a2=a0,a3=a0; const uint16_t* p=W; int64_t n=N*K;
 for(int64_t i=0;i<n;i+=64){a0=_mm512_add_ps(a0,ld(p+i));a1=_mm512_add_ps(a1,ld(p+i+16));a2=_mm512_add_ps(a2,ld(p+i+32));a3=_mm512_add_ps(a3,ld(p+i+48));}
 return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0,a1),_mm512_add_ps(a2,a3)));}
template<int HINT,int AHEAD>
void blocked(){ for(int64_t n=0;n<N;n+=4){ __m512 a[4]={_mm512_setzero_ps(),_mm512_setzero_ps(),_mm512_setzero_ps(),_mm512_setzero_ps()};
  const uint16_t* w=W+n*K; const char* ahead=(const char*)w+AHEAD;
  for(int64_t c=0;c<K;c+=16){ if(AHEAD>0){ for(int l=0;l<4*16*2;l+=64) _mm_prefetch(ahead+c*4*2+l,(_mm_hint)HINT);} __m512 x=_mm512_loadu_ps(X+c);
   for(int r=0;r<4;r++) a[r]=_mm512_fmadd_ps(x,ld(w+r*K+c),a[r]); }
  for(int r=0;r<4;r++) out[n+r]=_mm512_reduce_add_ps(a[r]); } }
template<int S,int HINT,int AHEAD>
void streams(){ int64_t q=N/S; for(int64_t n=0;n<q;n++){ __m512 a[S]; for(int s=0;s<S;s++)a[s]=_mm512_setzero_ps();
  for(int64_t c=0;c<K;c+=32){ __m512 x0=_mm512_loadu_ps(X+c), x1=_mm512_loadu_ps(X+c+16);
   for(int s=0;s<S;s++){ const uint16_t* w=W+(n+s*q)*K+c; if(AHEAD>0)_mm_prefetch((const char*)w+AHEAD,(_mm_hint)HINT); a[s]=_mm512_fmadd_ps(x0,ld(w),a[s]); a[s]=_mm512_fmadd_ps(x1,ld(w+16),a[s]);} }
  for(int s=0;s<S;s++) out[n+s*q]=_mm512_reduce_add_ps(a[s]); } }
// row-sequential: 1 row at a time, 4 accumulators, no prefetch
void rowseq(){ for(int64_t n=0;n<N;n++){ __m512 a0=_mm512_setzero_ps(),a1=a0; const uint16_t* w=W+n*K;
 for(int64_t c=0;c<K;c+=32){a0=_mm512_fmadd_ps(_mm512_loadu_ps(X+c),ld(w+c),a0);a1=_mm512_fmadd_ps(_mm512_loadu_ps(X+c+16),ld(w+c+16),a1);} out[n]=_mm512_reduce_add_ps(_mm512_add_ps(a0,a1)); } }
template<class F> void run(const char* name,F f,int reps){ double best=0,cpu_sum=0,wall_sum=0; for(int r=0;r<reps;r++){double c0=tcpu(),w0=twall(); f(); double c=tcpu()-c0,w=twall()-w0; double gbs=N*K*2/c/1e9; if(gbs>best)best=gbs; cpu_sum+=c; wall_sum+=w;}
 printf("%-28s best %6.2f GB/s (cpu time)  cpu/wall %.2f\n",name,best,cpu_sum/wall_sum);}
int main(int argc,char**argv){ int64_t bytes=(argc>1?atol(argv[1]):1024)<<20; N=bytes/(K*2); N=N/48*48;
 W=(uint16_t*)aligned_alloc(2<<20,N*K*2); madvise(W,N*K*2,MADV_HUGEPAGE); for(int64_t i=0;i<N*K;i++)W[i]=0x3c00+(i&7);
 X=(float*)aligned_alloc(64,K*4); for(int i=0;i<K;i++)X[i]=1.0f/(i+1); out=(float*)aligned_alloc(64,N*4);
 int reps=argc>2?atoi(argv[2]):5; volatile float sink;
 for(int round=0;round<2;round++){
 run("read-only sum",[&]{sink=readsum();},reps);
 run("blocked4 nta 32K (current)",[&]{blocked<_MM_HINT_NTA,32768>();},reps);
 run("blocked4 t0 32K",[&]{blocked<_MM_HINT_T0,32768>();},reps);
 run("blocked4 t1 4K",[&]{blocked<_MM_HINT_T1,4096>();},reps);
 run("blocked4 no prefetch",[&]{blocked<_MM_HINT_T0,0>();},reps);
 run("streams6 t0 512",[&]{streams<6,_MM_HINT_T0,512>();},reps);
 run("streams6 none",[&]{streams<6,_MM_HINT_T0,0>();},reps);
 run("streams12 none",[&]{streams<12,_MM_HINT_T0,0>();},reps);
 run("row-sequential none",[&]{rowseq();},reps);
 }
 (void)sink; }
