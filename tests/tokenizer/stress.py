"""The tokenizer comparisons' stress corpus: texts made, reproducibly, from the Unicode database
of the running Python (unicodedata; 14.0 in Debian 12's Python 3.11, the version of PCRE2 10.42's
tables too) and a seeded generator, to find where the C tokenizer and Hugging Face's part.

  corpus()  a list of (kind, text); the kinds:
    category    every assigned code point of each general category (letters, marks, numbers,
                punctuation, symbols, separators, controls and formats of every script; private
                use in part), alone in runs and, for at most 4,000 of each category, between
                spaces and framed by a letter, a digit, itself and a newline
    marks       every combining mark between marks of three other classes, every character with
                a canonical decomposition decomposed (where the normalizers' tables matter)
    mixed       random code points of random categories among ASCII letters, digits, spaces,
                contractions and newlines
    whitespace  runs of every Unicode space (and the format characters near them) of many
                lengths in every position, and random mixtures of them
    digits      runs of 1 to 40 digits of every script with decimal digits, a long run of each,
                mixtures of scripts with other numbers, number formats
    emoji       emoji with skin tones and variation selectors, ZWJ sequences, flags, keycaps,
                tag sequences, random runs of them
    cjk         Chinese, Japanese and Korean text: unified and compatibility ideographs (NFC
                changes the latter), kana of both widths, Hangul syllables and conjoining jamo
                (NFC composes them), CJK punctuation and full-width forms
    long        lines of 100,000 characters: one word, words, spaces, mixed white space, digits,
                ideographs, emoji, one letter with 99,999 accents, random code points
    controls    U+0000 in every position, C0 and C1 controls in context, noncharacters, U+FFFD,
                U+10FFFF

Lone surrogates and invalid UTF-8 cannot be texts (neither library takes them); compare.py checks
that both refuse them. usage: stress.py > stress.jsonl (one {"text": ...} row per text).
"""
import random
import unicodedata as ud

SEED = 1311
# Categories of the "category" kind: Cs (surrogates) cannot be text, Cn (unassigned) depends on
# each library's Unicode version (see docs/tokenizer.md), private use (Co) is taken in part.
CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
              "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co")
CHUNK = 200           # code points per text of the category kind
CONTEXT_MAX = 4000    # code points per category also put between spaces and in a frame
LONG = 100_000        # characters of a long line
ASCII_PIECES = ["a", "Z", "word", " ", "  ", "1", "42", "'s", "'LL", "\n", "\r\n", ".", "-", "_"]
# Characters near white space that are not White_Space (format characters, the old Zs U+180E).
NEAR_SPACES = "\u180e\u200b\u200c\u200d\u2060\ufeff\x1c\x1d\x1e\x1f"
NUMBER_FORMATS = ["3.14159", "1,000,000", "-42", "+7", "1e-9", "6.02E23", "0x1F", "0b1010",
                  "12:30:05", "2024-01-31", "1/2", "50%", "$1,299.99", "v1.2.3", "10⁻³", "x²",
                  "½", "⅞", "①②③", "ⅫⅣ", "٣٫١٤", "१२३", "一二三", "௰", "𝟘𝟙𝟚"]


def by_category():
    """Assigned code points by general category (the running Python's Unicode database)."""
    cats = {}
    for cp in range(0x110000):
        cats.setdefault(ud.category(chr(cp)), []).append(cp)
    cats["Co"] = [cp for cp in cats["Co"] if cp < 0xF0000 or cp % 64 == 0]
    return cats


def category_texts(cats):
    """Every code point of each category in runs of CHUNK; a stride sample of at most
    CONTEXT_MAX of them also between spaces and framed as x<c>7<c><c> and a newline."""
    out = []
    for cat in CATEGORIES:
        cps = cats.get(cat, [])
        chars = [chr(cp) for cp in cps]
        out += ["".join(chars[i:i + CHUNK]) for i in range(0, len(chars), CHUNK)]
        sample = chars[::max(1, len(chars) // CONTEXT_MAX)]
        for i in range(0, len(sample), CHUNK):
            part = sample[i:i + CHUNK]
            out.append(" " + " ".join(part))
            out.append("".join(f"x{c}7{c}{c}\n" for c in part))
    return out


def mark_texts(cats):
    """Where the normalizers' tables matter: every combining mark (class above 0) between marks
    of classes 1, 230 and 220 (canonical ordering), and every character with a canonical
    decomposition decomposed, alone and before a class-1 mark (composition), CHUNK to a text."""
    marks = [chr(cp) for cat in ("Mn", "Mc", "Me") for cp in cats[cat] if ud.combining(chr(cp))]
    probes = [f"a\u0334{m}\u0301\u0316{m} " for m in marks]
    for cat in CATEGORIES:
        for c in map(chr, cats.get(cat, [])):
            d = ud.decomposition(c)
            if d and not d.startswith("<"):
                nfd = ud.normalize("NFD", c)
                probes.append(f"{nfd} {nfd}\u0334 ")
    return ["".join(probes[i:i + CHUNK]) for i in range(0, len(probes), CHUNK)]


def random_char(rng, cats):
    """A code point of a random category of CATEGORIES."""
    return chr(rng.choice(cats[rng.choice(CATEGORIES)]))


def mixed_texts(rng, cats, n=1500):
    """n texts of 1 to 120 units: a random code point of a random category, or an ASCII piece."""
    return ["".join(random_char(rng, cats) if rng.random() < 0.6 else rng.choice(ASCII_PIECES)
                    for _ in range(rng.randint(1, 120))) for _ in range(n)]


def spaces(cats):
    """Every White_Space character (categories Zs, Zl, Zp and the white-space controls)."""
    return [chr(cp) for cp in cats["Zs"] + cats["Zl"] + cats["Zp"]] + list("\t\n\x0b\x0c\r\x85")


def whitespace_texts(rng, cats, n=400):
    """For each space and near-space: runs of many lengths after a letter, before and after a
    newline, between digits, after punctuation, around CR LF, at both ends; then n random
    mixtures of runs of them between words."""
    out = []
    every = spaces(cats) + list(NEAR_SPACES)
    for w in every:
        parts = []
        for k in (1, 2, 3, 4, 5, 8, 16, 33, 100):
            r = w * k
            parts += [f"a{r}b", f"{r}\n", f"\n{r}", f"1{r}2", f".{r}!", f"{r}\r\n{r}"]
        out.append(w * 3 + "".join(parts) + w * 2)
    for _ in range(n):
        units = []
        for _ in range(rng.randint(1, 12)):
            units.append("".join(rng.choice(every) for _ in range(rng.randint(1, 40))))
            units.append(rng.choice(ASCII_PIECES + ["x", "9", "!", "中"]))
        out.append("".join(units[rng.randint(0, 1):]))
    return out


def digit_sets():
    """The ten digits of every script with decimal digits (category Nd), by zero."""
    sets = {}
    for cp in range(0x110000):
        c = chr(cp)
        if ud.category(c) == "Nd":
            sets.setdefault(cp - ud.decimal(c), []).append(c)
    return [sets[z] for z in sorted(sets)]


def digit_texts(rng, cats, n=300):
    """Runs of 1 to 40 digits of each script between separators and one run of 1,000; n
    mixtures of digits of random scripts with other numbers (Nl, No); the number formats."""
    out = []
    seps = [" ", ",", ".", "a", "\n", "", "-", " x "]
    sets = digit_sets()
    for digits in sets:
        out.append("".join("".join(rng.choice(digits) for _ in range(k)) + rng.choice(seps) for k in range(1, 41)))
        out.append("".join(rng.choice(digits) for _ in range(1000)))
    others = [chr(cp) for cp in cats["Nl"] + cats["No"]]
    for _ in range(n):
        out.append("".join(rng.choice(rng.choice(sets)) if rng.random() < 0.8 else rng.choice(others + seps)
                           for _ in range(rng.randint(1, 50))))
    out.append(" ".join(NUMBER_FORMATS))
    out += NUMBER_FORMATS
    return out


def emoji_units(cats):
    """The pieces emoji text is made of: base emoji, with skin tones, with VS15/VS16, ZWJ
    sequences, flags, keycaps, tag sequences."""
    base = [chr(cp) for cp in cats["So"] if 0x1F300 <= cp <= 0x1FAFF or 0x2600 <= cp <= 0x27BF]
    people = [chr(cp) for cp in list(range(0x1F466, 0x1F46A)) + [0x1F44B, 0x1F44D, 0x270B, 0x1F64B, 0x1F9D1]]
    tones = [chr(cp) for cp in range(0x1F3FB, 0x1F400)]
    ri = [chr(cp) for cp in range(0x1F1E6, 0x1F200)]
    zwj = ["👨‍👩‍👧‍👦", "👩‍💻", "🏳️‍🌈", "❤️‍🔥", "🧑🏽‍🚀", "👁️‍🗨️", "🐻‍❄️", "👩🏿‍🤝‍👩🏻", "🏴‍☠️"]
    tags = ["🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
            "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"]
    keycaps = [k + "\ufe0f\u20e3" for k in "0123456789#*"] + [k + "\u20e3" for k in "15#"]
    return {"base": base, "toned": [p + t for p in people for t in tones],
            "variation": [b + v for b in base[:200] for v in ("\ufe0e", "\ufe0f")],
            "zwj": zwj, "flags": [a + b for a in ri for b in ri[::5]], "keycaps": keycaps,
            "tags": tags, "ri": ri, "base_list": base}


def emoji_texts(rng, cats, n=600):
    """Every base emoji in one text; n texts of 1 to 30 units (random ZWJ joins of 2 to 4 base
    emoji, odd runs of regional indicators among them) with random separators."""
    u = emoji_units(cats)
    kinds = ["base", "toned", "variation", "zwj", "flags", "keycaps", "tags"]
    out = ["".join(u["base"])]
    seps = ["", "", " ", "\n", "a", "1", ".", "中"]
    for _ in range(n):
        units = []
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.1:
                units.append("\u200d".join(rng.choice(u["base"]) for _ in range(rng.randint(2, 4))))
            elif r < 0.15:
                units.append("".join(rng.choice(u["ri"]) for _ in range(rng.choice((1, 3, 5)))))
            else:
                units.append(rng.choice(u[rng.choice(kinds)]))
            units.append(rng.choice(seps))
        out.append("".join(units))
    return out


# CJK pieces as (first, last) code point ranges; NFC maps the compatibility ideographs to
# unified ones and composes conjoining jamo.
CJK_RANGES = {
    "unified": (0x4E00, 0x9FFF), "ext_a": (0x3400, 0x4DBF), "ext_b": (0x20000, 0x2A6DF),
    "compat": (0xF900, 0xFAD9), "compat_sup": (0x2F800, 0x2FA1D), "hiragana": (0x3041, 0x3096),
    "katakana": (0x30A1, 0x30FA), "halfwidth": (0xFF66, 0xFF9D), "punct": (0x3000, 0x303F),
    "fullwidth": (0xFF01, 0xFF5E), "hangul": (0xAC00, 0xD7A3), "bopomofo": (0x3105, 0x312F),
}


def cjk_piece(rng):
    """One CJK piece: a character of a random range of CJK_RANGES, a conjoining-jamo syllable
    (leading, vowel, maybe trailing), or an ASCII piece."""
    r = rng.random()
    if r < 0.1:
        return chr(rng.randint(0x1100, 0x1112)) + chr(rng.randint(0x1161, 0x1175)) + \
            (chr(rng.randint(0x11A8, 0x11C2)) if rng.random() < 0.5 else "")
    if r < 0.2:
        return rng.choice(ASCII_PIECES)
    lo, hi = CJK_RANGES[rng.choice(sorted(CJK_RANGES))]
    return chr(rng.randint(lo, hi))


def cjk_texts(rng, n=600):
    """n texts of 1 to 200 CJK pieces."""
    return ["".join(cjk_piece(rng) for _ in range(rng.randint(1, 200))) for _ in range(n)]


def long_texts(rng, cats):
    """Lines of LONG characters, each stressing one path: one pre-token of ASCII letters, words,
    one run of spaces, mixed white space, digits, ideographs, emoji, a letter with LONG - 1
    acute accents (one combining sequence), random code points of every category."""
    words = "".join(rng.choice("abcdefghij klmnopqrst uvwxyz,.") for _ in range(LONG))
    ws = spaces(cats)
    emoji = emoji_units(cats)["base"]
    return [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(LONG)),
        words,
        " " * LONG,
        "".join(rng.choice(ws) for _ in range(LONG)),
        "".join(rng.choice("0123456789") for _ in range(LONG)),
        "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(LONG)),
        "".join(rng.choice(emoji) for _ in range(LONG)),
        "e" + "\u0301" * (LONG - 1),
        "".join(random_char(rng, cats) for _ in range(LONG)),
    ]


def control_texts(cats):
    """U+0000 alone, repeated, between letters, after and before special tokens, before a
    combining mark, among digits and spaces; every C0/C1 control in context; the
    noncharacters, U+FFFD and U+10FFFF."""
    nul = ["\x00", "\x00" * 7, "a\x00b", "\x00a", "a\x00", "<|im_end|>\x00<|im_start|>",
           "\x00<|endoftext|>", "\x00 \x00\n\x00\r\n", "x\x00\u0301", "12\x00345", "  \x00  ",
           "中\x00文", "\x00\U0001F600\x00", "'s\x00'll"]
    controls = [f"a{c}b {c}{c}\n{c}1{c} " for c in map(chr, cats["Cc"])]
    nonchars = [chr(cp) for cp in range(0xFDD0, 0xFDF0)] + \
               [chr(p * 0x10000 + k) for p in range(17) for k in (0xFFFE, 0xFFFF)]
    return nul + controls + ["".join(nonchars), " ".join(nonchars), "a\ufffdb\ufffd\ufffd", "\U0010FFFF"]


def corpus(seed=SEED):
    """The stress corpus: (kind, text) pairs, the same for the same seed and Unicode database."""
    rng = random.Random(seed)
    cats = by_category()
    kinds = [("category", category_texts(cats)), ("marks", mark_texts(cats)), ("mixed", mixed_texts(rng, cats)),
             ("whitespace", whitespace_texts(rng, cats)), ("digits", digit_texts(rng, cats)),
             ("emoji", emoji_texts(rng, cats)), ("cjk", cjk_texts(rng)), ("long", long_texts(rng, cats)),
             ("controls", control_texts(cats))]
    return [(kind, t) for kind, texts in kinds for t in texts]
