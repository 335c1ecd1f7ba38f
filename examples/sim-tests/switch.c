/* Switch statements compiled to jump tables, and a state machine. */
#include <stdio.h>

static int classify(int c) {
	switch (c) {
	case 0: return 11; case 1: return 23; case 2: return 5; case 3: return 77;
	case 4: return 1; case 5: return 9; case 6: return 31; case 7: return 2;
	case 8: return 64; case 9: return 13; case 10: return 8; case 11: return 99;
	case 12: return 4; case 13: return 50; case 14: return 6; case 15: return 17;
	default: return -1;
	}
}

static const char *tok(char c) {
	switch (c) {
	case 'a': case 'e': case 'i': case 'o': case 'u': return "V";
	case ' ': return "_";
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9': return "D";
	case '.': case ',': case '!': case '?': return "P";
	default: return "c";
	}
}

int main(void) {
	long sum = 0;
	for (int i = -3; i < 400; i++) sum += classify(i % 19) * (i & 7);
	printf("sum %ld\n", sum);
	const char *s = "the 3 quick brown foxes, 42 lazy dogs! ok?";
	for (const char *q = s; *q; q++) printf("%s", tok(*q));
	printf("\n");
	/* a state machine counting words and numbers */
	enum { SPACE, WORD, NUM } st = SPACE;
	int words = 0, nums = 0;
	for (const char *q = s; *q; q++) {
		char c = *q;
		switch (st) {
		case SPACE:
			if (c >= '0' && c <= '9') { st = NUM; nums++; }
			else if (c >= 'a' && c <= 'z') { st = WORD; words++; }
			break;
		case WORD:
			if (!(c >= 'a' && c <= 'z')) st = SPACE;
			break;
		case NUM:
			if (!(c >= '0' && c <= '9')) st = SPACE;
			break;
		}
	}
	printf("words %d numbers %d\n", words, nums);
	return 0;
}
