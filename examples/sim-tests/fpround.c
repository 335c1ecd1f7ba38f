/* Floating point in every rounding mode: results as bits, and the flags.
   The operands include subnormals, values near overflow, exact halfway
   cases, signed zeros, infinities and NaNs. */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static uint64_t db(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static uint32_t fb(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static double bd(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
static float bf(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

static volatile double D[] = {1.0, -1.0, 3.0, 0.1, 1e308, -1e308, 4.9e-324, 2.2250738585072014e-308,
	1.0000000000000002, 0.5, 0.0, -0.0, 1e-300, 7.0, 1.5, 2.5, -2.5, 9007199254740993.0, 1e16};
static volatile float F[] = {1.0f, -1.0f, 3.0f, 0.1f, 3e38f, -3e38f, 1.4e-45f, 1.17549435e-38f,
	1.0000001f, 0.5f, 0.0f, -0.0f, 1e-30f, 7.0f, 1.5f, 2.5f, -2.5f, 16777217.0f, 1e10f};
static const int modes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
static const char *mname[] = {"rne", "rtz", "rdn", "rup"};

static unsigned flags(void) {
	unsigned f = fetestexcept(FE_ALL_EXCEPT);
	feclearexcept(FE_ALL_EXCEPT);
	return f;
}

int main(void) {
	int nd = sizeof D / sizeof D[0], nf = sizeof F / sizeof F[0];
	uint64_t h = 0;
	for (int mi = 0; mi < 4; mi++) {
		fesetround(modes[mi]);
		feclearexcept(FE_ALL_EXCEPT);
		uint64_t hd = 0, hf = 0, hc = 0;
		for (int i = 0; i < nd; i++)
			for (int j = 0; j < nd; j++) {
				double a = D[i], b = D[j];
				hd = hd * 31 + db(a + b); hd = hd * 31 + flags();
				hd = hd * 31 + db(a - b); hd = hd * 31 + flags();
				hd = hd * 31 + db(a * b); hd = hd * 31 + flags();
				hd = hd * 31 + db(a / b); hd = hd * 31 + flags();
				hd = hd * 31 + db(fma(a, b, D[(i + j) % nd])); hd = hd * 31 + flags();
				hd = hd * 31 + db(fmin(a, b)) + db(fmax(a, b)); hd = hd * 31 + flags();
				hd = hd * 31 + (a < b) + 2 * (a <= b) + 4 * (a == b); hd = hd * 31 + flags();
			}
		for (int i = 0; i < nf; i++)
			for (int j = 0; j < nf; j++) {
				float a = F[i], b = F[j];
				hf = hf * 31 + fb(a + b); hf = hf * 31 + flags();
				hf = hf * 31 + fb(a - b); hf = hf * 31 + flags();
				hf = hf * 31 + fb(a * b); hf = hf * 31 + flags();
				hf = hf * 31 + fb(a / b); hf = hf * 31 + flags();
				hf = hf * 31 + fb(fmaf(a, b, F[(i + j) % nf])); hf = hf * 31 + flags();
				hf = hf * 31 + fb(fminf(a, b)) + fb(fmaxf(a, b)); hf = hf * 31 + flags();
			}
		for (int i = 0; i < nd; i++) {
			double a = D[i];
			hc = hc * 31 + db(sqrt(fabs(a))); hc = hc * 31 + flags();
			hc = hc * 31 + fb((float)a); hc = hc * 31 + flags();
			hc = hc * 31 + (uint64_t)lrint(a * 1e-300); hc = hc * 31 + flags();
			hc = hc * 31 + (uint64_t)(long)a; hc = hc * 31 + flags();
			hc = hc * 31 + (uint64_t)(int)a; hc = hc * 31 + flags();
			hc = hc * 31 + (uint64_t)(unsigned long)a; hc = hc * 31 + flags();
			hc = hc * 31 + (uint64_t)(unsigned)a; hc = hc * 31 + flags();
			hc = hc * 31 + db((double)(long)(a * 1e3)); hc = hc * 31 + flags();
			hc = hc * 31 + fb((float)(uint64_t)(a * 1e18)); hc = hc * 31 + flags();
			hc = hc * 31 + db(rint(a)) + db(nearbyint(a * 3)); hc = hc * 31 + flags();
			hc = hc * 31 + fb(sqrtf(fabsf(F[i]))); hc = hc * 31 + flags();
			hc = hc * 31 + db((double)F[i]); hc = hc * 31 + flags();
		}
		printf("%s: double %016llx float %016llx conv %016llx\n", mname[mi],
			(unsigned long long)hd, (unsigned long long)hf, (unsigned long long)hc);
		h ^= hd ^ hf ^ hc;
	}
	fesetround(FE_TONEAREST);
	double nan = bd(0x7ff4000000000000ull); /* signalling */
	float snan = bf(0x7fa00000u);
	volatile double z = 0.0;
	printf("nan ops: %016llx %08x %016llx flags %x\n", (unsigned long long)db(nan + 1.0), fb(snan * 2.0f),
		(unsigned long long)db(z / z), flags());
	printf("classes:");
	double cl[] = {-INFINITY, -1.0, -4.9e-324, -0.0, 0.0, 4.9e-324, 1.0, INFINITY, nan, NAN};
	for (int i = 0; i < 10; i++) printf(" %d", fpclassify(cl[i]) * 2 + (signbit(cl[i]) != 0));
	printf("\nall %016llx\n", (unsigned long long)h);
	return 0;
}
