"""Generate the small, owned test corpus ``tests/data/corpus.jsonl``.

The corpus mixes documents of clearly different quality, composed from hand-written
templates (no lorem ipsum, nothing downloaded):

* ``prose``       - explanatory paragraphs on ten topics, sentences sampled without repeats;
* ``boilerplate`` - cookie banners, navigation menus, footers, login prompts;
* ``links``       - link lists (titles and URLs, one per line);
* ``code``        - short Python / JavaScript / SQL snippets;
* ``repeated``    - a few lines repeated many times;
* ``spam``        - keyword stuffing, shouting and pseudo-offers.

Each row has ``id`` (int), ``text``, ``kind`` (one of the above), ``domain`` (the prose topic,
or the kind for non-prose) and ``good`` (1 for prose, else 0). The output is deterministic
for a given seed; rerun with ``python tests/data/make_corpus.py`` after editing templates.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOPICS: dict[str, list[str]] = {
    "astronomy": [
        "A star spends most of its life fusing hydrogen into helium in its core.",
        "The energy released by fusion pushes outward and balances the inward pull of gravity.",
        "When the hydrogen runs low, the core contracts and the outer layers swell into a red giant.",
        "Stars much heavier than the Sun end their lives in supernova explosions that scatter heavy elements.",
        "Astronomers measure the distance to nearby stars by watching them shift against the background as the Earth orbits.",
        "Light from the most distant galaxies has travelled for billions of years before reaching our telescopes.",
        "The colour of a star tells us its surface temperature, with blue stars far hotter than red ones.",
        "Planets around other stars are often found by the tiny dip in brightness they cause when they pass in front of their star.",
        "The Moon always shows the same face to the Earth because its rotation is locked to its orbit.",
        "Comets are loose bodies of ice and dust that grow bright tails when they approach the Sun.",
    ],
    "cooking": [
        "Bread rises because yeast feeds on sugars in the dough and releases carbon dioxide.",
        "Kneading develops gluten, a network of proteins that traps the gas and gives the loaf its structure.",
        "A long, cool fermentation produces more flavour than a quick rise in a warm kitchen.",
        "Salt slows the yeast slightly, so it is best weighed rather than added by guesswork.",
        "Searing meat over high heat browns the surface through the Maillard reaction.",
        "Resting a roast after cooking lets the juices settle so they stay in the meat when it is carved.",
        "Acid from lemon juice or vinegar can brighten a heavy sauce at the very end of cooking.",
        "Onions cooked slowly in butter turn sweet as their sugars caramelise.",
        "A sharp knife is safer than a dull one because it needs less force and slips less often.",
        "Stock made from roasted bones has a deeper colour and a richer taste than stock made from raw ones.",
    ],
    "printing": [
        "Before the printing press, books in Europe were copied by hand, often in monasteries.",
        "Johannes Gutenberg combined movable metal type, oil-based ink and a screw press around 1450.",
        "Each letter was cast in a mould so that thousands of identical pieces of type could be made.",
        "Printed books became cheaper, and within fifty years presses were working in hundreds of towns.",
        "The spread of printing helped standardise spelling and grammar in many languages.",
        "Pamphlets printed in large numbers carried religious and political arguments across borders.",
        "Printers often acted as publishers, editors and booksellers at the same time.",
        "Woodcut illustrations were set alongside the type so that text and pictures could be printed together.",
        "Paper made from linen rags was strong enough to survive centuries of handling.",
        "Historians still argue about how quickly printing changed the way ordinary people read.",
    ],
    "gardening": [
        "Healthy soil is full of organisms that break down dead plants and release nutrients.",
        "Adding compost improves both the structure of clay soils and the water holding of sandy ones.",
        "Most vegetables need at least six hours of direct sunlight a day to crop well.",
        "Watering deeply and less often encourages roots to grow down rather than stay near the surface.",
        "Rotating crops from bed to bed each year reduces the build-up of pests and diseases.",
        "A layer of mulch keeps moisture in the ground and smothers many weed seedlings.",
        "Tomatoes are sensitive to frost, so they are usually planted out after the last cold night of spring.",
        "Bees and hoverflies visit flowering herbs and help pollinate nearby fruit trees.",
        "Pruning an apple tree in winter lets light reach the centre and improves the next harvest.",
        "Seeds saved from open-pollinated varieties grow into plants much like their parents.",
    ],
    "finance": [
        "Compound interest means that interest earned in one year itself earns interest in the following years.",
        "Over long periods, small differences in fees can add up to a large share of an investment's growth.",
        "An emergency fund covering a few months of expenses protects against having to borrow at high rates.",
        "Spreading savings across many companies reduces the damage any single failure can do.",
        "Inflation slowly erodes the value of cash that is kept under the mattress.",
        "A budget works best when it records what is actually spent rather than what was planned.",
        "Paying off a credit card in full each month avoids interest charges altogether.",
        "Bonds usually move less than shares, which is why they are often held to steady a portfolio.",
        "People tend to sell investments in a panic after prices have already fallen.",
        "Automatic transfers on payday make saving a habit rather than a decision made every month.",
    ],
    "sleep": [
        "Sleep is not a single state but a cycle of stages that repeats several times each night.",
        "During deep sleep the body releases growth hormone and repairs tissue.",
        "Most vivid dreaming happens in rapid eye movement sleep, when the muscles are almost paralysed.",
        "The body's internal clock is set mainly by light, especially bright light in the morning.",
        "Caffeine blocks a chemical signal that builds up during the day and makes us feel sleepy.",
        "Teenagers naturally tend to fall asleep and wake later than younger children or adults.",
        "Going to bed and getting up at the same times every day helps keep the internal clock steady.",
        "A short nap in the early afternoon can improve alertness without spoiling sleep at night.",
        "Long-term lack of sleep is linked to problems with memory, mood and the immune system.",
        "A cool, dark and quiet bedroom makes it easier to fall asleep and stay asleep.",
    ],
    "computing": [
        "Early electronic computers filled whole rooms and used thousands of vacuum tubes.",
        "The transistor replaced the vacuum tube because it was smaller, cooler and far more reliable.",
        "Integrated circuits placed many transistors on a single chip of silicon.",
        "For decades the number of transistors on a chip roughly doubled every two years.",
        "High-level programming languages let people write instructions without thinking about the hardware.",
        "Operating systems share the processor and memory between many programs at once.",
        "The first networks linked a handful of university computers so that researchers could share them.",
        "Personal computers reached ordinary homes in the late nineteen seventies and early eighties.",
        "Graphics processors were designed for drawing pictures but now also train large neural networks.",
        "Storing data in many copies on different machines protects it when one disk fails.",
    ],
    "rivers": [
        "A river carries sediment from the mountains and drops it where the current slows down.",
        "Meanders form as water erodes the outside of each bend and deposits sand on the inside.",
        "Deltas grow where a river enters the sea faster than waves and tides can remove its mud.",
        "Floodplains are fertile because every flood spreads a thin layer of silt over the fields.",
        "Dams store water for cities and farms but also trap the sediment that beaches downstream need.",
        "Salmon return from the ocean to the streams where they hatched in order to spawn.",
        "The Nile flows north through the desert, fed by rains that fall far to the south.",
        "Wetlands along a river soak up floodwater like a sponge and release it slowly.",
        "Waterfalls retreat upstream over time as the rock at their lip is worn away.",
        "Many early cities grew beside rivers that supplied water, food and a route for trade.",
    ],
    "music": [
        "A musical scale is a set of notes arranged in order of pitch within an octave.",
        "Two notes an octave apart sound alike because one vibrates exactly twice as fast as the other.",
        "Chords are built by stacking notes, most often in intervals of a third.",
        "A major chord tends to sound bright, while a minor chord sounds darker to most listeners.",
        "Rhythm organises sound in time, and the metre groups beats into regular bars.",
        "Composers create tension with dissonant chords and release it when the harmony resolves.",
        "The same melody can be played in a different key by moving every note by the same interval.",
        "String players change pitch by pressing the string against the fingerboard to shorten it.",
        "Orchestras tune to the oboe because its clear tone is easy for everyone to hear.",
        "Improvisers in jazz often build new lines over the chord changes of a familiar song.",
    ],
    "bicycles": [
        "A bicycle chain wears slowly and stretches, which in turn wears the teeth of the gears.",
        "Checking chain wear with a simple gauge is cheaper than replacing the whole drivetrain later.",
        "Tyre pressure affects comfort, grip and the effort needed to keep rolling.",
        "Brake pads should be replaced before the grooves in their surface have worn away.",
        "Cleaning and lightly oiling the chain after riding in the rain prevents rust.",
        "A bike that fits well puts less strain on the knees, back and wrists.",
        "Gears let a rider keep a comfortable pedalling speed on hills and on the flat.",
        "Spokes under uneven tension make a wheel wobble from side to side.",
        "Lights and bright clothing make a cyclist much easier for drivers to see at dusk.",
        "Many repairs need only a few tools, such as tyre levers, a pump and a set of hex keys.",
    ],
}

BOILERPLATE_LINES = [
    "We use cookies to improve your experience on our site.",
    "By continuing to browse you agree to our use of cookies.",
    "Accept all cookies",
    "Manage cookie preferences",
    "Privacy Policy | Terms of Use | Cookie Policy",
    "Copyright {year} {site}. All rights reserved.",
    "Home | About Us | Services | Blog | Contact",
    "Sign in to your account",
    "Forgot your password?",
    "Subscribe to our newsletter",
    "Follow us on Facebook, Twitter and Instagram",
    "JavaScript is disabled in your browser. Please enable JavaScript to view this page.",
    "Skip to main content",
    "Search this site",
    "Powered by {site}",
    "Back to top",
    "Share this page",
    "Log in or register to post comments",
    "Site map",
    "Terms and conditions apply.",
]

SITES = ["Acme Media", "Northwind News", "BlueHarbor", "Pinecrest Online", "Oakfield Press", "Brightline"]
LINK_TITLES = [
    "Latest news",
    "Sports results",
    "Weather forecast",
    "Cheap flights",
    "Best laptops 2024",
    "Recipes",
    "Horoscopes",
    "Car insurance quotes",
    "Celebrity gossip",
    "Job listings",
    "Free games",
    "Download center",
    "Coupons and deals",
    "Photo gallery",
    "Top 10 lists",
]
DOMAINS = ["example.com", "news-portal.net", "shop-deals.biz", "bestsites.org", "linkfarm.info"]

CODE_TEMPLATES = [
    "def {f}(items):\n    total = 0\n    for x in items:\n        if x > {n}:\n            total += x\n    return total\n\n\nprint({f}([1, 2, 3, {n}]))",
    "import os\n\nfor root, dirs, files in os.walk('{d}'):\n    for name in files:\n        if name.endswith('.{ext}'):\n            print(os.path.join(root, name))",
    "function {f}(arr) {{\n  return arr.filter(x => x % {n} === 0).map(x => x * 2);\n}}\nconsole.log({f}([1, 2, 3, 4, {n}]));",
    "SELECT {col}, COUNT(*) AS n\nFROM {tbl}\nWHERE {col} IS NOT NULL\nGROUP BY {col}\nORDER BY n DESC\nLIMIT {n};",
    "class {F}:\n    def __init__(self, size={n}):\n        self.size = size\n        self.data = []\n\n    def push(self, x):\n        if len(self.data) >= self.size:\n            self.data.pop(0)\n        self.data.append(x)",
    '#include <stdio.h>\n\nint main(void) {{\n    int i, s = 0;\n    for (i = 0; i < {n}; i++) {{\n        s += i * i;\n    }}\n    printf("%d\\n", s);\n    return 0;\n}}',
]
NAMES = ["process", "compute", "handle", "parse", "collect", "reduce", "render", "update"]

REPEATED_LINES = [
    "Click here to subscribe!",
    "Limited offer, today only.",
    "Add to cart",
    "Price: $19.99",
    "In stock",
    "Free shipping on all orders",
    "Read more",
    "Next page",
]

SPAM_KEYWORDS = [
    "cheap watches",
    "replica bags",
    "casino bonus",
    "weight loss pills",
    "payday loans",
    "free followers",
    "crypto profits",
    "viagra online",
]
SPAM_PHRASES = [
    "BUY NOW!!!",
    "BEST PRICE $$$",
    "100% GUARANTEED!!!",
    "CLICK HERE >>>",
    "LIMITED TIME!!!",
    "WIN BIG $$$",
    "ACT FAST!!!",
    "NO PRESCRIPTION!!!",
]


def prose(rng: random.Random, topic: str, n_sentences: int) -> str:
    sents = rng.sample(TOPICS[topic], k=min(n_sentences, len(TOPICS[topic])))
    paras, i = [], 0
    while i < len(sents):
        k = rng.randint(2, 4)
        paras.append(" ".join(sents[i : i + k]))
        i += k
    return "\n\n".join(paras)


def long_prose(rng: random.Random, n_chars: int = 2000) -> str:
    """Prose of about ``n_chars`` characters drawn across topics (for benchmarks)."""
    parts: list[str] = []
    while sum(len(p) + 2 for p in parts) < n_chars:
        topic = rng.choice(sorted(TOPICS))
        parts.append(prose(rng, topic, rng.randint(3, 5)))
    return "\n\n".join(parts)[:n_chars]


def boilerplate(rng: random.Random) -> str:
    site = rng.choice(SITES)
    lines = rng.sample(BOILERPLATE_LINES, k=rng.randint(6, 12))
    return "\n".join(line.format(site=site, year=rng.randint(2005, 2024)) for line in lines)


def links(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(8, 20)):
        title = rng.choice(LINK_TITLES)
        slug = title.lower().replace(" ", "-")
        url = f"https://www.{rng.choice(DOMAINS)}/{slug}?id={rng.randint(100, 99999)}"
        out.append(rng.choice([f"{title} - {url}", url, f"* {title}: {url}"]))
    return "\n".join(out)


def code(rng: random.Random) -> str:
    t = rng.choice(CODE_TEMPLATES)
    return t.format(
        f=rng.choice(NAMES),
        F=rng.choice(NAMES).title() + "Buffer",
        n=rng.randint(2, 99),
        d=rng.choice(["/tmp", "./data", "src"]),
        ext=rng.choice(["py", "txt", "csv"]),
        col=rng.choice(["city", "user_id", "category"]),
        tbl=rng.choice(["orders", "events"]),
    )


def repeated(rng: random.Random) -> str:
    base = rng.sample(REPEATED_LINES, k=rng.randint(1, 3))
    return "\n".join(base[i % len(base)] for i in range(rng.randint(10, 30)))


def spam(rng: random.Random) -> str:
    kw = rng.choice(SPAM_KEYWORDS)
    words = []
    for _ in range(rng.randint(15, 40)):
        words.append(rng.choice([kw, kw, kw.upper(), rng.choice(SPAM_PHRASES), f"best {kw}", f"{kw} online"]))
    return " ".join(words)


def make(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows: list[dict] = []
    topics = sorted(TOPICS)
    for i in range(160):
        topic = topics[i % len(topics)]
        rows.append({"kind": "prose", "domain": topic, "text": prose(rng, topic, rng.randint(4, 9))})
    for kind, fn, n in [
        ("boilerplate", boilerplate, 40),
        ("links", links, 40),
        ("code", code, 30),
        ("repeated", repeated, 30),
        ("spam", spam, 40),
    ]:
        for _ in range(n):
            rows.append({"kind": kind, "domain": kind, "text": fn(rng)})
    rng.shuffle(rows)
    return [
        {"id": i, "text": r["text"], "kind": r["kind"], "domain": r["domain"], "good": int(r["kind"] == "prose")}
        for i, r in enumerate(rows)
    ]


def main() -> None:
    out = Path(__file__).with_name("corpus.jsonl")
    with out.open("w", encoding="utf-8") as f:
        for row in make():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
