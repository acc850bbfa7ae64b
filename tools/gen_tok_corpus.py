#!/usr/bin/env python3
"""gen_tok_corpus.py — the tokenizer test corpus, deterministic from a seed.

    tools/gen_tok_corpus.py [--seed N] [--lines N] [-o FILE]

Writes one record per line (default 12,000 records, seed 14, to stdout):
prose in Latin (English, French, German, Spanish, Polish, Vietnamese),
Cyrillic, Greek, CJK (Chinese, Japanese, Korean), Arabic, Hindi and Thai
scripts; code; numbers in many notations and digit systems; runs of
whitespace and newlines (tabs, CR LF, no-break and ideographic spaces);
emoji with skin tones, ZWJ sequences, flags and keycaps; contractions
in every case; the special-token strings of every tokenizer family; a few
long records (up to ~40 kB); and records holding invalid UTF-8.

A record is bytes; the file escapes it so that it stays one line:
backslash -> \\\\, LF -> \\n, CR -> \\r, and a byte that is not part of
valid UTF-8 -> \\xNN (lower-case hex). Every other byte is itself.
tools/check_tokenizers.py and build/wick-tok-check undo the same escapes
(unescape() below). Only Python's own random module is used, and the
script's own word lists, so every machine writes the same file.
"""
import argparse
import random
import sys

# ---- word lists --------------------------------------------------------

EN = """the of and to in is was for that with as on by at from his her they this be are
have not had but which one were all their there been has when who will more no if out
so said what up its about into than them can only other new some could time these two
may then first any like now my such make over our even most after also made many did
before must through back years where much your way well down should because each just
those people how too little state good very world still own see men work long here get
both between life being under never day same another know while last might great old
year off come since against go came right used take three himself few house use during
without again place around however home small found Mrs thought went say part once
general high upon school every don't does got united left number course war until always
away something fact though water less public put think almost hand enough far took head
yet government system better set told nothing night end why called didn't eyes find going
look asked later knew point next program city business give group toward young days let
room president side social present given several order national possible rather second
face per among form important often things looked early white case John become large big
need four within felt along children saw best church ever least power development light
tokenizer byte pair encoding merges Wick GPU kernel tensor matrix quickly jumped lazy fox""".split()
FR = """le la les de des du un une et est dans pour que qui sur avec pas plus par ce cette
il elle nous vous ils sont été être avoir fait comme mais où très aussi bien sans sous
entre après avant déjà même encore toujours jamais peut-être là-bas français été hôtel
garçon façon cœur œuvre naïve Noël élève théâtre château forêt fenêtre l'homme aujourd'hui
qu'il s'est c'était j'ai""".split()
DE = """der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es
an als nach wie bei aus wird noch nur einer um über Straße groß Größe schön Mädchen Bär
Übung Ärger Öffnung fünf Grüße heißen Fußball Donaudampfschifffahrtsgesellschaft
Weiß müssen können dürfen""".split()
ES = """el la los las de y que en un una es por con para no se su al lo como más pero sus
le ya o este sí porque esta entre cuando muy sin sobre también me hasta hay donde quien
desde todo nos durante todos uno les ni contra otros ese eso ante ellos e esto mí antes
algunos qué unos yo otro otras otra él tanto esa estos mucho quienes nada muchos cual
año niño mañana corazón canción pequeño España ¿Qué? ¡Hola!""".split()
PL = """jest nie się na że do to w z co jak ale tak za od po już może tylko jeszcze bardzo
źdźbło żółw gęś łódź Kraków Łódź Gdańsk zażółć gęślą jaźń""".split()
VI = """Tiếng Việt không có được người những một của và là cho các với này đã trong để
nhiều đến khi như thì nước Hà Nội Sài Gòn phở bánh mì cà phê xin chào cảm ơn""".split()
RU = """и в не на я быть он с что а по это она этот к но они мы как из у который то за
свой что весь год от так о для ты же все тот мочь вы человек такой его сказать только
или ещё бы себя один как уже до время если сам когда другой вот говорить наш мой знать
стать при чтобы дело жизнь кто первый очень два день её новый рука даже во со раз где
там под можно ну какой после их работа без самый потом надо хотеть ли слово идти
большой должен место иметь ничто Москва Россия привет спасибо пожалуйста хорошо
объём съезд ёлка Ёж""".split()
UK = """і та що це як але він вона ми ви вони бути мати Україна Київ привіт дякую
ґанок їжак є""".split()
EL = """και το η της του να σε με για που από τα οι στο στην είναι δεν θα ένα μια τον
την των τους ότι αλλά ή όταν πολύ Ελλάδα Αθήνα καλημέρα ευχαριστώ φιλοσοφία
ψυχή ωραίος Ωμέγα ΆΛΦΑ ΐ ΰ ς""".split()
ZH_CHARS = ("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年"
            "生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起"
            "与好看学进种将还分此心前面又定见只主没公从知识语言模型计算机程序数据北京上海汉字"
            "龍體國語讀書電腦網絡")
JA_WORDS = """こんにちは ありがとう です ます した する いる ある これ それ あれ どれ
日本 東京 大阪 今日 明日 天気 カタカナ ひらがな コンピューター プログラム トークン
テスト ラーメン すし さくら 私は 学生 です。 ｶﾀｶﾅ ﾃｽﾄ""".split()
KO_WORDS = """안녕하세요 감사합니다 한국어 서울 사람 사랑 컴퓨터 프로그램 학교 시간 오늘
내일 물 밥 먹다 가다 오다 있다 없다 그리고 하지만 그래서 대한민국 ㄱㄴㄷ""".split()
AR = """في من على إلى أن هذا التي الذي مع كان عن هذه ما لا هو هي كل بين قد بعد ذلك
العربية مرحبا شكرا السلام عليكم كتاب مدرسة الحاسوب البرمجة اللغة بِسْمِ اللَّهِ""".split()
HI = """और के है में की को से एक यह पर था हैं भी नहीं तो ही हिन्दी भारत नमस्ते धन्यवाद
कंप्यूटर भाषा विद्यालय प्रोग्राम क्षत्रिय श्री ज्ञान""".split()
TH = """สวัสดี ขอบคุณ ภาษาไทย ประเทศไทย กรุงเทพ คอมพิวเตอร์ โปรแกรม ครับ ค่ะ ไม่ ใช่
และ ที่ ของ ใน เป็น มี ได้ ให้ จะ ว่า การ คน นี้ ไป มา""".split()
EMOJI = ["😀", "😂", "🥲", "❤️", "👍", "👍🏽", "👋🏿", "🙏", "🔥", "✨", "🎉", "🚀", "🤖", "🧠",
         "👨‍👩‍👧‍👦", "👩‍💻", "🏳️‍🌈", "🧑🏽‍🚀", "❤️‍🔥", "🇫🇷", "🇯🇵", "🇺🇸", "1️⃣", "#️⃣",
         "☕", "⌚", "©️", "™", "🫠", "🪿", "🦄", "🐍", "👁️‍🗨️", "🤷‍♀️", "🏊🏻‍♂️"]
PUNCT = list(".,;:!?…—–-()[]{}\"'«»„“”‘’·•/\\|@#$%^&*+=<>~`_¿¡。、，！？「」『』（）：；")
SPECIALS = ["<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
            "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
            "<|eot_id|>", "<start_of_turn>", "<end_of_turn>", "<pad>", "<|im_sep|>", "<|",
            "|>", "<s", "</", "<|im_start", "<<s>>", "<|reserved_special_token_3|>"]
SPACES = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ",
          "\u00a0", "\u3000", "\u2003", "\u2009", "\u202f", "\u205f", "\u2028", "\u2029",
          "\u0085", "\x0b", "\x0c", "\u180e", "\u200b", "\ufeff", "\u1680"]
IDENT = """x y i j n k buf len size count value result data tmp ptr node list map key item
self this args kwargs ctx dev tensor shape dtype stride offset next prev head tail
get_value setValue HTTPServer parse_json MAX_LEN kBufferSize __init__ _private""".split()
KEYWORDS = """def return if else elif for while in not and or import from class struct int
float double char void const static unsigned size_t let var function async await try
except finally catch throw new delete public private fn pub impl match use mut""".split()


def words_line(rng, words, n_lo, n_hi, sep=" "):
    n = rng.randint(n_lo, n_hi)
    out = []
    for _ in range(n):
        w = rng.choice(words)
        r = rng.random()
        if r < 0.08:
            w = w.capitalize()
        elif r < 0.11:
            w = w.upper()
        out.append(w)
        if rng.random() < 0.12:
            out[-1] += rng.choice(",.;:!?")
    s = sep.join(out)
    if rng.random() < 0.7:
        s = s[:1].upper() + s[1:] + rng.choice([".", "!", "?", "...", ""])
    return s


def zh_line(rng):
    n = rng.randint(5, 60)
    s = "".join(rng.choice(ZH_CHARS) for _ in range(n))
    # punctuation every few characters
    out = []
    for i, c in enumerate(s):
        out.append(c)
        if i and rng.random() < 0.08:
            out.append(rng.choice("，。！？、：；"))
    if rng.random() < 0.3:  # random CJK unified ideographs (all assigned since Unicode 1.1)
        out.append("".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(1, 8))))
    return "".join(out)


def th_line(rng):
    return "".join(rng.choice(TH) for _ in range(rng.randint(3, 20))) + rng.choice(["", " ", "ครับ", "ค่ะ"])


def number(rng):
    k = rng.randint(0, 17)
    if k == 0:
        return str(rng.randint(0, 10 ** rng.randint(1, 25)))
    if k == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 8)}f}"
    if k == 2:
        return f"{rng.randint(1, 10**9):,}"
    if k == 3:
        return f"{rng.uniform(1e-30, 1e30):e}"
    if k == 4:
        return hex(rng.getrandbits(rng.randint(4, 64)))
    if k == 5:
        return f"{rng.randint(1900, 2099)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if k == 6:
        return f"+1 ({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
    if k == 7:
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    if k == 8:  # Arabic-Indic, Devanagari, Thai, fullwidth digits
        base = rng.choice([0x0660, 0x06F0, 0x0966, 0x0E50, 0xFF10, 0x09E6])
        return "".join(chr(base + int(d)) for d in str(rng.randint(0, 10**6)))
    if k == 9:
        return rng.choice(["½", "¾", "²", "³", "¹⁰", "Ⅻ", "ⅷ", "①②③", "㉑", "𝟙𝟚", "٣٫١٤"])
    if k == 10:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(20, 80)))
    if k == 11:
        return f"{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}"
    if k == 12:
        return f"${rng.randint(0, 99999)}.{rng.randint(0, 99):02d}"
    if k == 13:
        return f"{rng.randint(0, 100)}%"
    if k == 14:
        return f"v{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 99)}"
    if k == 15:
        return f"{rng.randint(1, 999)}x{rng.randint(1, 999)}"
    if k == 16:
        return f"{rng.randint(1, 99)} 000 {rng.randint(100, 999)},{rng.randint(0, 99)}"
    return str(-rng.randint(0, 1000))


def numbers_line(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        parts.append(number(rng))
        parts.append(rng.choice([" ", ", ", "; ", " + ", "*", "/", " = ", "\t", "", " and "]))
    return "".join(parts).rstrip()


def code_line(rng):
    k = rng.randint(0, 9)
    ind = rng.choice(["", "    ", "        ", "\t", "\t\t", "  ", "            "])
    a, b, c = rng.choice(IDENT), rng.choice(IDENT), rng.choice(IDENT)
    if k == 0:
        return f"{ind}def {a}({b}, {c}=None):\n{ind}    return {b} + {rng.randint(0, 99)}"
    if k == 1:
        return f"{ind}for (int {a} = 0; {a} < {b}; {a}++) {{ {c}[{a}] += {a} * {rng.randint(1, 9)}; }}"
    if k == 2:
        return f"{ind}if ({a} != NULL && {b}->{c} >= 0x{rng.getrandbits(16):04x}) return -EINVAL;"
    if k == 3:
        return f"{ind}const {a} = await fetch(`/api/{b}?id=${{{c}}}`).then(r => r.json());"
    if k == 4:
        return f'{ind}printf("%s: %d\\n", "{a}", {b});  // {rng.choice(EN)} {rng.choice(EN)}'
    if k == 5:
        return f"{ind}# {words_line(rng, EN, 2, 8)}\n{ind}{a} = [{b} for {b} in range({rng.randint(1, 100)}) if {b} % 2 == 0]"
    if k == 6:
        return f"{ind}<div class=\"{a}\" id='{b}'>&lt;{c}&gt; &amp; &#x{rng.getrandbits(12):x};</div>"
    if k == 7:
        return f"{ind}SELECT {a}, COUNT(*) FROM {b} WHERE {c} > {rng.randint(0, 999)} GROUP BY {a};"
    if k == 8:
        return f'{ind}{{"{a}": [{rng.randint(0, 9)}, {rng.random():.3f}, null, true], "{b}": "{c}\\u00e9"}}'
    return f"{ind}fn {a}(&mut self, {b}: &[u8]) -> Result<{c}, Error> {{ Ok(()) }}\r\n"


def whitespace_line(rng):
    parts = []
    for _ in range(rng.randint(1, 10)):
        parts.append("".join(rng.choice(SPACES) for _ in range(rng.randint(1, 6))))
        if rng.random() < 0.6:
            parts.append(rng.choice(EN + RU + JA_WORDS + ["x", "1", "!", "'s", "'ll"]))
    return "".join(parts)


def emoji_line(rng):
    parts = []
    for _ in range(rng.randint(1, 10)):
        parts.append("".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.6:
            parts.append(" " + words_line(rng, rng.choice([EN, RU, ES, JA_WORDS]), 1, 4) + " ")
    return "".join(parts)


def contractions_line(rng):
    subj = ["I", "you", "we", "they", "it", "he", "she", "that", "there", "John", "Я"]
    tails = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D",
             "'ſ", "n't", "N'T", "'x", "’s", "'", "''", "'1"]
    out = []
    for _ in range(rng.randint(2, 9)):
        out.append(rng.choice(subj) + rng.choice(tails) + rng.choice(["", " ", "  ", "\n", "!"]))
        if rng.random() < 0.4:
            out.append(rng.choice(EN))
    return " ".join(out)


def special_line(rng):
    parts = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.45:
            parts.append(rng.choice(SPECIALS))
        elif r < 0.75:
            parts.append(words_line(rng, rng.choice([EN, FR, RU]), 1, 5))
        else:
            parts.append(rng.choice(SPACES))
        if rng.random() < 0.3:
            parts.append(rng.choice(["", " ", "\n"]))
    return "".join(parts)


def mixed_line(rng):
    gens = [lambda: words_line(rng, EN, 1, 10), lambda: words_line(rng, RU, 1, 6),
            lambda: zh_line(rng), lambda: words_line(rng, JA_WORDS, 1, 5, sep=""),
            lambda: words_line(rng, AR, 1, 5), lambda: words_line(rng, HI, 1, 5),
            lambda: th_line(rng), lambda: number(rng), lambda: rng.choice(EMOJI),
            lambda: rng.choice(PUNCT) * rng.randint(1, 4), lambda: rng.choice(SPACES)]
    return rng.choice(["", " ", "\t"]).join(rng.choice(gens)() for _ in range(rng.randint(2, 10)))


def prose_line(rng):
    lang = rng.choice(["en", "en", "en", "fr", "de", "es", "pl", "vi", "ru", "uk", "el", "zh",
                       "ja", "ko", "ar", "hi", "th"])
    if lang == "zh":
        return zh_line(rng)
    if lang == "th":
        return th_line(rng)
    if lang == "ja":
        return words_line(rng, JA_WORDS, 2, 15, sep=rng.choice(["", "", " "]))
    table = {"en": EN, "fr": FR, "de": DE, "es": ES, "pl": PL, "vi": VI, "ru": RU, "uk": UK,
             "el": EL, "ko": KO_WORDS, "ar": AR, "hi": HI}
    s = words_line(rng, table[lang], 3, 30)
    if rng.random() < 0.15:
        s += rng.choice(["\n", "\n\n", "  ", " \n"]) + words_line(rng, table[lang], 2, 12)
    return s


def long_line(rng):
    k = rng.randint(0, 4)
    if k == 0:
        return " ".join(prose_line(rng) for _ in range(rng.randint(50, 300)))
    if k == 1:
        return "\n".join(code_line(rng) for _ in range(rng.randint(100, 600)))
    if k == 2:
        return rng.choice([" ", "\n", "\t", "a", "0", "=", "😀", "中", "\u00a0"]) * rng.randint(1000, 40000)
    if k == 3:
        return "".join(rng.choice(ZH_CHARS) for _ in range(rng.randint(2000, 12000)))
    return numbers_line(rng) * rng.randint(50, 400)


INVALID = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe2\x82", b"\xe4\xb8", b"\xf0\x9f\x98",
           b"\xff", b"\xfe", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",
           b"\xe0\x80\xaf", b"\xc3", b"\xc3\x28", b"\xa0\xa1", b"\xf5", b"\x80\x80\x80"]


def invalid_record(rng):
    base = rng.choice([prose_line, code_line, emoji_line, numbers_line, mixed_line])(rng)
    base = base.replace("\ufffd", "?").encode("utf-8")
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(base))
        # cut only at a character boundary so the damage is the inserted bytes
        while 0 < pos < len(base) and (base[pos] & 0xC0) == 0x80:
            pos += 1
        base = base[:pos] + rng.choice(INVALID) + base[pos:]
    if rng.random() < 0.2:  # a valid character cut short at the end
        base += "é中😀".encode("utf-8")[rng.choice([0, 2, 5])] .to_bytes(1, "little")
    return base


KINDS = [(prose_line, 34), (code_line, 12), (numbers_line, 9), (whitespace_line, 8),
         (emoji_line, 7), (contractions_line, 5), (special_line, 6), (mixed_line, 12)]


def record(rng, i):
    r = rng.random()
    if r < 0.03:
        return invalid_record(rng)
    if r < 0.035:
        return long_line(rng).encode("utf-8")
    if r < 0.04:
        return rng.choice(["", " ", "\n", "\t", "\r\n", "  \n  ", "'", "0"]).encode("utf-8")
    fns, weights = zip(*KINDS)
    return rng.choices(fns, weights)[0](rng).encode("utf-8")


def escape(b):
    out = []
    i, n = 0, len(b)
    while i < n:
        # the longest valid UTF-8 character at i, else one invalid byte
        for ln in (1, 2, 3, 4):
            if i + ln > n:
                ln = 0
                break
            try:
                ch = b[i:i + ln].decode("utf-8")
                break
            except UnicodeDecodeError:
                continue
        else:
            ln = 0
        if ln == 0:
            out.append("\\x%02x" % b[i])
            i += 1
            continue
        out.append({"\\": "\\\\", "\n": "\\n", "\r": "\\r"}.get(ch, ch))
        i += ln
    return "".join(out)


def unescape(s):
    """escaped line (str, no newline) -> record bytes"""
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            d = s[i + 1]
            if d == "\\":
                out += b"\\"; i += 2; continue
            if d == "n":
                out += b"\n"; i += 2; continue
            if d == "r":
                out += b"\r"; i += 2; continue
            if d == "x" and i + 3 < n + 0:
                out.append(int(s[i + 2:i + 4], 16)); i += 4; continue
        out += c.encode("utf-8")
        i += 1
    return bytes(out)


def generate(seed, lines):
    rng = random.Random(seed)
    return [record(rng, i) for i in range(lines)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--lines", type=int, default=12000)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    recs = generate(a.seed, a.lines)
    text = "".join(escape(r) + "\n" for r in recs)
    for r in recs:  # the escapes must round-trip
        assert unescape(escape(r)) == r, r
    if a.output == "-":
        sys.stdout.buffer.write(text.encode("utf-8"))
    else:
        with open(a.output, "wb") as f:
            f.write(text.encode("utf-8"))


if __name__ == "__main__":
    main()
