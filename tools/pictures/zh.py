"""The Chinese labels of the docs' pictures: ``make_pictures.py --lang zh`` draws docs/img/zh/<name>.svg.

Every picture is drawn by the same code in both languages (same runs, same numbers, same layout); only the
labels differ. ``svg.Svg`` passes each label and title through :func:`translate`, which looks it up here:
first as a whole string in ``EXACT``, then against the patterns of ``PATTERNS`` (each must match the whole
label; its groups are data: numbers, tokens, quoted text, code, kept as they are). A label no entry matches is
drawn unchanged: tokens ("␣not"), generated text, code (``top_k=50``) and numbers stay as they are.
The terms are those of docs/glossary.zh.md (词元 for token, 对数几率 for logits, 束搜索, 温度 ...).

tests/docs/test_pictures.py checks that every English word a Chinese picture still shows is data of its
picture (a token, text or code of its sidecar JSON), so a new English label fails until it has an entry here.
"""

from __future__ import annotations

import re

EXACT = {
    # shared by several pictures
    "raw": "原始", "eos": "eos", "−inf": "−inf", "pruned": "剪掉", "banned": "禁止", "finished": "已完成",
    "greedy": "贪心", "step": "步", "Entropy-based warpers": "基于熵的 warper", "yes": "是", "before": "之前", "after": "之后", "score": "分数",
    "forced": "强制", "dropped": "丢弃", "unfinished": "未完成", "pad": "pad", "model:": "模型：",
    "in ctx": "已出现", "Stopping": "停止",
    # beam trees
    "finished hypotheses (best first)": "已完成假设（最好的在前）",
    "score = Σ / ℓ^α   (ℓ = generated length)": "分数 = Σ / ℓ^α   （ℓ = 生成长度）",
    "kept (a running beam)": "保留（运行中的 beam）",
    "pruned: ranked after K kept": "剪掉：排在保留的 K 个之后",
    "eos ranked < K: finished": "eos 排名 < K：完成",
    "eos ranked ≥ K: ignored": "eos 排名 ≥ K：忽略",
    "best returned sequence": "返回的最好序列",
    # group beam search
    "Group beam search on the toy tree": "玩具树上的分组束搜索",
    "groups run in turn; a token chosen this step by an earlier group costs λ per earlier choice":
        "各组依次运行；这一步前面的组已选过的词元，每被选过一次就扣 λ",
    "returned (score includes the penalties):": "返回的序列（分数含惩罚）：",
    # length penalty
    "Length penalty": "长度惩罚",
    "Length penalty: score = Σ / ℓ^α of the beam-search page's two sequences":
        "长度惩罚：束搜索一页两条序列的分数 = Σ / ℓ^α",
    # pipeline overview
    "The decoding pipeline, one real run": "解码流水线：一次真实运行",
    "prompt text": "提示词文本", "prefill: all T tokens at once": "prefill：T 个词元一次算完",
    "last position, softmax:": "最后一个位置，softmax：", "on the logits (all modes)": "作用于对数几率（所有模式）",
    "barely changed: none of these": "几乎不变：这些词元", "sampling only; softmax after each": "只在采样时；每步后做 softmax",
    "cumulative p in id order": "按 id 顺序的累积 p", "first to pass u:": "第一个超过 u 的：",
    "greedy would take": "贪心会取", "append the token:": "接上这个词元：", "max_new_tokens reached?": "达到 max_new_tokens？",
    "eos drawn?": "抽到 eos？", "no: feed only the new": "否：只把新词元", "token to the model": "送进模型",
    "(the cache holds the rest)": "（其余的在 cache 里）", "fed to model": "送入模型", "cache after": "之后的 cache",
    "u drawn": "抽到的 u", "token out": "得到的词元",
    # processor pipeline, one-step pictures
    "One step through the processors, in generate()'s order (each panel: softmax after it)":
        "一步依次经过各处理器，顺序同 generate()（每格：经过它之后的 softmax）",
    "top-p kept set, renormalised": "top-p 保留的集合，重新归一化",
    "Top-k: keep the k best, renormalise": "Top-k：保留最好的 k 个，重新归一化",
    "Top-p: the smallest set whose mass reaches p": "Top-p：总概率达到 p 的最小集合",
    "Top-k against top-p": "Top-k 与 top-p 对比",
    "Top-p: three rules": "Top-p：三种规则", "Top-p: which tokens three ways of writing the rule keep":
        "Top-p：同一条规则的三种写法各保留哪些词元",
    "green = kept, grey = dropped; numbers are the probabilities": "绿色 = 保留，灰色 = 丢弃；数字是概率",
    "transformers": "transformers", "llama (top-p article)": "llama（top-p 文章）",
    "shifted (sampling note)": "右移（采样笔记）",
    "Repetition penalty: tokens already in the input (orange) lose": "重复惩罚：输入里已有的词元（橙色）被压低",
    # sampling
    "Sampling: the draw": "采样：抽取",
    "the token whose segment holds u is drawn: often not the most probable one": "u 落在哪个词元的区间，就抽中哪个词元：往往不是概率最大的那个",
    # stopping
    # strategies
    "Choosing a strategy": "如何选择解码策略",
    "Choosing a strategy: what each one writes on the shipped model, and which to pick":
        "如何选择解码策略：各策略在自带模型上写出什么，该选哪个",
    "Which to pick": "该选哪个", "One correct answer?": "只有一个正确答案？",
    "translation, summary, short": "翻译、摘要、简短回答、", "answer, code: maximise p": "代码：让 p 最大",
    "greedy search": "贪心搜索", "more probable, K rows per step; with": "概率更高，每步 K 行；配合",
    "no_repeat_ngram_size, length_penalty": "no_repeat_ngram_size、length_penalty",
    "Open-ended text?": "开放式文本？", "story, dialogue: the most": "故事、对话：概率最大的",
    "probable text is bland, repeats": "文本平淡、会重复", "contrastive search": "对比搜索",
    "deterministic, penalises repeats": "确定性的，惩罚重复", "Several good answers?": "要几个好答案？",
    "options to choose from": "供人挑选", "sample-and-rank, beam sample,": "sample-and-rank、beam sample、",
    "group beam search; sample-and-rank:": "分组束搜索；sample-and-rank：", "draw N, keep the most probable": "抽 N 个，留概率最大的",
    "(N rows per step)": "（每步 N 行）",
    "Up and left = probable and repetitive (greedy, beam); down and right = varied and less probable per token (sampling). "
    "No point is best on both axes:": "左上 = 概率高、重复（贪心、束搜索）；右下 = 多样、每个词元概率较低（采样）。没有哪个点在两条轴上都最好：",
    "the task decides which axis matters (the page's worked example has the texts).":
        "由任务决定看重哪条轴（页面的小例子里有这些文本）。",
    # others
    "Contrastive search": "对比搜索", "Constrained beam search": "约束束搜索", "Entropy-based warpers": "基于熵的 warper",
    "KV cache reorder": "KV cache 重排", "The KV cache: prefill, decode, left padding": "KV cache：prefill、解码、左填充",
    "Speculative decoding: draft, verify, accept": "投机解码：草稿、验证、接受",
    "max cos": "最大 cos", "top-k": "top-k", "kept": "保留", "rows = beams; each row holds its beam's keys and values for all cached positions":
        "行 = beam；每行存着它的 beam 在所有已缓存位置上的 key 和 value",
    "without the prompt (u)": "不带提示词（u）", "bank = how much of the constraint a candidate has fulfilled; the K kept are "
    "taken round-robin: the best of the highest bank, then of the next, …":
        "bank = 候选已满足约束的程度；保留的 K 个轮流选取：先取最高 bank 里最好的，再取下一个 bank 的，……",
    "next-token probabilities (row = previous token):": "下一个词元的概率（行 = 前一个词元）：",
    "draft = model's argmax: accepted": "草稿 = 模型的 argmax：接受", "first draft it rejects": "第一个被拒绝的草稿",
    "not used (after the rejection)": "未使用（在拒绝之后）", "max length reached": "达到最大长度",
    "output = greedy search's, token for token: yes": "输出与贪心搜索逐词元相同：是",
}

#: (pattern, replacement): the pattern must match the whole label; \1, \2 ... are its data, kept as they are
PATTERNS = [
    # beam trees
    (r"Beam search on the toy tree: greedy finds (\S+), two beams find (\S+)", r"玩具树上的束搜索：贪心找到 \1，两条 beam 找到 \2"),
    (r"Beam sample, seed (\d+): both beams draw “(.+)”", r"beam sample，种子 \1：两条 beam 都抽到“\2”"),
    (r"Beam search on (?:the shipped model|(.+?)): “(.+)”, (\d+) new tokens",
     lambda m: f"{'自带模型' if m.group(1) is None else m.group(1)}上的束搜索：“{m.group(2)}”，{m.group(3)} 个新词元"),
    (r"(beam search|beam sample), K = (\d+), length_penalty α = (\S+); each box: token, log p of the step, Σ = running sum",
     lambda m: f"{'束搜索' if m.group(1) == 'beam search' else 'beam sample'}，K = {m.group(2)}，length_penalty α = "
               f"{m.group(3)}；每个框：词元、这一步的 log p、Σ = 累计和"),
    (r"greedy: (.+) \(p = (\S+)\)", r"贪心：\1（p = \2）"),
    # group beam search
    (r"Group beam search: (\d+) groups of (\d+) beams?, diversity_penalty λ = (\S+) \(toy tree\)",
     r"分组束搜索：\1 组、每组 \2 条 beam，diversity_penalty λ = \3（玩具树）"),
    (r"group (\d+)", r"第 \1 组"), (r"step (\d+): (.+)", r"第 \1 步：\2"), (r"step (\d+)", r"第 \1 步"),
    (r"paid: (\S+)", r"付出：\1"), (r"paid λ·(\S+) = (\S+)", r"付出 λ·\1 = \2"),
    (r"avoided “(.+)” \(penalised\)", r"避开了“\1”（受罚）"),
    # length penalty
    (r"lines: the same Σ at other lengths ℓ; dots: the sequences' real lengths \((\d+) and (\d+)\); higher score wins",
     r"曲线：同样的 Σ 在其他长度 ℓ 上的分数；圆点：两条序列的实际长度（\1 和 \2）；分数高者胜"),
    (r"winner: sequence (\d+)", r"胜者：序列 \1"),
    (r"sequence (\d+): “the weather is good today”, (.+)", r"序列 \1：“今天天气很好”，\2"),
    (r"sequence (\d+): “the weather is really, really good today”, (.+)", r"序列 \1：“今天天气真的真的很好”，\2"),
    # min length
    (r"Min length (\d+): eos is banned while the length \(prompt included\) < (\d+)",
     r"最小长度 \1：长度（含提示词）< \2 时禁止 eos"),
    (r"prompt (\[.*\]), greedy; output (\[.*\])", r"提示词 \1，贪心；输出 \2"),
    (r"length (\d+)", r"长度 \1"),
    # no-repeat n-gram
    (r"No-repeat n-gram: “(.+)” has occurred, so “(.+)” is banned", r"禁止重复 n-gram：“\1”已经出现过，所以禁止“\2”"),
    (r"after “(.+)”: greedy would say “(.+)” \(the first (\d+)-gram ending there has occurred before\)",
     r"在“\1”之后：贪心会选“\2”（以它结尾的 \3-gram 之前出现过）"),
    # one-step pictures: context lines
    (r"after “(.+)” \(shipped model, greedy context\), (\d+) most probable; T > 1 moves mass to the other (.+) tokens",
     r"在“\1”之后（自带模型，贪心的上下文），概率最大的 \2 个；T > 1 把概率挪给其余 \3 个词元"),
    (r"after “(.+)” \(shipped model, greedy context\), (\d+) most probable; line = cumulative mass, dashed = p",
     r"在“\1”之后（自带模型，贪心的上下文），概率最大的 \2 个；折线 = 累积概率，虚线 = p"),
    (r"after “(.+)” \(shipped model, greedy context\), (\d+) most probable",
     r"在“\1”之后（自带模型，贪心的上下文），概率最大的 \2 个"),
    (r"after “(.+)” \(shipped model\); the repetition penalty acts on logits, then the warpers: temperature → top-k → top-p",
     r"在“\1”之后（自带模型）；先是重复惩罚作用于对数几率，然后是 warper：温度 → top-k → top-p"),
    (r"after “(.+)” \(shipped model\): the (\d+) most probable tokens and eos; softmax of each processor's output",
     r"在“\1”之后（自带模型）：概率最大的 \2 个词元和 eos；每个处理器输出的 softmax"),
    (r"Temperature: softmax\(logits / T\)", r"温度：softmax(对数几率 / T)"),
    (r"top-k, k = (\d+) \(renormalised\)", r"top-k，k = \1（重新归一化）"),
    (r"sorted p, cumulative mass, p = (\S+)", r"排序后的 p、累积概率，p = \1"),
    (r"Top-k \(k = (\d+)\) and top-p \(p = (\S+)\) on a flat and on a peaked step of the shipped model",
     r"自带模型平坦的一步和尖锐的一步上的 top-k（k = \1）与 top-p（p = \2）"),
    (r"blue = kept, grey = cut; the (\d+) most probable tokens of each step\. A fixed k keeps too few on a flat step and too "
     r"many on a peaked one; p adapts",
     r"蓝色 = 保留，灰色 = 截掉；每步概率最大的 \1 个词元。固定的 k 在平坦的一步上保留太少，在尖锐的一步上保留太多；p 会自适应"),
    (r"(flat|peaked) step, after “(.+)” \(top token p = (\S+)\)",
     lambda m: f"{'平坦' if m.group(1) == 'flat' else '尖锐'}的一步，在“{m.group(2)}”之后（最大词元 p = {m.group(3)}）"),
    (r"(flat|peaked) step, after “(.+)”: entropy H = (\S+) nats",
     lambda m: f"{'平坦' if m.group(1) == 'flat' else '尖锐'}的一步，在“{m.group(2)}”之后：熵 H = {m.group(3)} nats"),
    (r"top-([kp]) = (\S+): keeps (\d+) tokens, mass (\S+)", r"top-\1 = \2：保留 \3 个词元，总概率 \4"),
    (r"p = (\S+): top-p article's example", r"p = \1：top-p 文章的例子"),
    (r"p = (\S+): mass before token (\d+) is exactly p", r"p = \1：词元 \2 之前的总概率恰好是 p"),
    (r"p = (\S+): same rule, different floats", r"p = \1：同一条规则，不同的浮点数"),
    # pipeline overview
    (r"The pipeline on one real run: the shipped model, “(.+)”, sampling \(seed (\d+)\)",
     r"一次真实运行中的流水线：自带模型，“\1”，采样（种子 \2）"),
    (r"(generate\(.*\)); step (\d+) shown stage by stage, then the loop", r"\1；逐阶段展示第 \2 步，然后是循环"),
    (r"(\d) · tokenizer", r"\1 · 分词器"), (r"(\d) · model \(\+ KV cache\)", r"\1 · 模型（+ KV cache）"),
    (r"(\d) · processors", r"\1 · 处理器"), (r"(\d) · warpers", r"\1 · warper"), (r"(\d) · draw", r"\1 · 抽取"),
    (r"(\d) · stop\?", r"\1 · 停止？"), (r"logits (\(.*\))", r"对数几率 \1"),
    (r"cache: (\d+) positions / layer", r"cache：每层 \1 个位置"), (r"\(\+ (\d+) more tokens\)", r"（另有 \1 个词元）"),
    (r"(\d+) tokens is in the prompt yet", r"\1 个词元都还不在提示词里"), (r"nucleus: (\d+) tokens left", r"核：剩下 \1 个词元"),
    (r"u = (\S+) \(uniform\)", r"u = \1（均匀分布）"), (r"“(.+)” \(the argmax\)", r"“\1”（argmax）"),
    (r"the loop: steps (.+) \(decode: 1 token in, 1 position added to the cache\)",
     r"循环：第 \1 步（解码：每步送入 1 个词元，cache 增加 1 个位置）"),
    (r"(.+)  \(prefill\)", r"\1  （prefill）"), (r"(\d+) positions", r"\1 个位置"), (r"(\S+)  \((\d+) left\)", r"\1  （剩 \2）"),
    (r"text: (.+)", r"文本：\1"),
    # processor pipeline
    # sampling
    (r"Sampling \(shipped model, seed (\d+)\): each step's probabilities end to end on \[0, 1\), and the uniform u drawn",
     r"采样（自带模型，种子 \1）：每步的概率首尾相接铺在 [0, 1) 上，以及抽到的均匀随机数 u"),
    (r"(generate\(.*\)): top-k (\d+) by default, so (\d+) segments, in token-id order \(as torch\.multinomial sums them\);",
     r"\1：默认 top-k \2，所以有 \3 段，按词元 id 排列（torch.multinomial 就按这个顺序求和）；"),
    (r"step (\d+), after “(.+)”:  u = (\S+) → “(.+)” \(p = (\S+), rank (\d+) of (\d+); the argmax is “(.+)”\)",
     r"第 \1 步，在“\2”之后：u = \3 → “\4”（p = \5，\7 个中排第 \6；argmax 是“\8”）"),
    # stopping
    (r"\(transformers ([\d.]+): every StoppingCriteria returns one bool; the per-row flags stop a row, only all of them "
     r"stop the loop\)", r"（transformers \1：每个 StoppingCriteria 返回一个 bool；逐行的标记停下一行，全部行都停下才结束循环）"),
    (r"Stopping: one answer for the whole batch; a finished row gets pad until every row is done",
     r"停止：整个 batch 一个回答；结束的行填 pad，直到每一行都结束"),
    (r"three prompts a, b, c of a bigram table \(a → b → c → eos\); eos = (\d+), pad_token_id = (\d+)",
     r"二元概率表上的三个提示词 a、b、c（a → b → c → eos）；eos = \1，pad_token_id = \2"),
    (r"max_new_tokens = (\d+): stops after (\d+) steps \(every row emitted eos\)",
     r"max_new_tokens = \1：\2 步后停止（每一行都输出了 eos）"),
    (r"max_new_tokens = (\d+): stops after (\d+) steps \(max_length reached\)",
     r"max_new_tokens = \1：\2 步后停止（达到 max_length）"),
    (r"the eos row check runs per row \(unfinished flags\); max_length is a criterion for the batch: with (\d+) new tokens, "
     r"row a is cut before its eos",
     r"eos 检查逐行进行（unfinished 标记）；max_length 是整个 batch 的停止条件：只生成 \1 个新词元时，a 行在它的 eos 之前被截断"),
    # strategies
    (r"“(.+)” \+ (\d+) tokens; likelihood = the model's mean log p per token, diversity = (distinct-?\d) \(distinct bigrams / "
     r"bigrams\); sampled ones: seeds (.+)",
     r"“\1” + \2 个词元；似然 = 模型给每个词元的平均 log p，多样性 = \3（不同二元组数 / 二元组数）；采样的种子：\4"),
    (r"diversity: (distinct-?\d) →", r"多样性：\1 →"), (r"likelihood: mean log p →", r"似然：平均 log p →"),
    (r"beam, K=(\d+)", r"束搜索，K=\1"), (r"contrastive α=(\S+), k=(\d+)", r"对比搜索 α=\1，k=\2"),
    (r"sampling T=(\S+) \(top-k (\d+)\) \(mean of (\d+)\)", r"采样 T=\1（top-k \2）（\3 次平均）"),
    (r"T=(\S+) \(top-k (\d+)\) \(mean of (\d+)\)", r"T=\1（top-k \2）（\3 次平均）"),
    (r"top-p (\S+) \(mean of (\d+)\)", r"top-p \1（\2 次平均）"), (r"typical (\S+) \(mean of (\d+)\)", r"typical \1（\2 次平均）"),
    (r"cheapest: (\d+) row per step", r"最省：每步 \1 行"), (r"here: log p (\S+), (distinct-?\d) (\S+)", r"这里：log p \1，\2 \3"),
    (r"beam search, K = (\d+)", r"束搜索，K = \1"), (r"sampling: T (\S+) or top-p (\S+)", r"采样：T \1 或 top-p \2"),
    (r"\(top-k (\d+) is on by default\)", r"（默认开着 top-k \1）"),
    # bad words and forcing
    (r"Bad words, sequence bias and forced eos on one step \(each on the raw logits\)",
     r"一步上的禁用词、序列偏置与强制 eos（各自作用于原始对数几率）"),
    (r"sequence_bias (\S+) on (\d+)", r"sequence_bias：\2 加 \1"), (r"forced eos, last step", r"强制 eos，最后一步"),
    # constrained beam search
    (r"Constrained beam search, token (\d+) forced \(the page's bigram model, K = (\d+)\): each step's candidates and "
     r"their banks", r"约束束搜索，强制词元 \1（该页的二元模型，K = \2）：每一步的候选及其 bank"),
    (r"Σ log p (\S+)", r"Σ log p \1"), (r"kept (\d+)", r"保留 \1"), (r"result \(score = Σ / ℓ\)", r"结果（分数 = Σ / ℓ）"),
    (r"plain:  (.+)", r"普通：  \1"), (r"forced: (.+)", r"强制：\1"),
    (r"token (\d+) is eos; a hypothesis", r"词元 \1 是 eos；一个假设"),
    (r"finishes only once (\d+) is in it", r"只有含 \1 时才能结束"), (r"after (\d+): (.+)", r"\1 之后：\2"),
    # contrastive search
    (r"Contrastive search on the shipped model, α = (\S+), k = (\d+): score = (.+)",
     r"自带模型上的对比搜索，α = \1，k = \2：分数 = \3"),
    (r"each step: the k most probable tokens, their probability p, their degeneration penalty \(the largest cosine "
     r"similarity of their hidden state", r"每一步：概率最大的 k 个词元、它们的概率 p、退化惩罚（它们的隐藏状态与"),
    (r"with any earlier position's\) and the score; the highest score is taken \(green\), not always the most probable "
     r"\(first row\)", r"之前任一位置的余弦相似度的最大值）和分数；取分数最高的（绿色），不一定是概率最大的（第一行）"),
    (r"contrastive: (.+)", r"对比搜索：\1"), (r"greedy: +(.+)", r"贪心：      \1"),
    # entropy warpers
    (r"Typical, epsilon, eta and min-p \(and top-p\) on a flat and on a peaked step of the shipped model",
     r"自带模型平坦的一步和尖锐的一步上的 typical、epsilon、eta 与 min-p（以及 top-p）"),
    (r"green = kept; the (\d+) most probable tokens with their probabilities; right: tokens kept in all \(of (.+)\) and "
     r"the cut-off each rule used", r"绿色 = 保留；概率最大的 \1 个词元及其概率；右侧：一共保留的词元数（共 \2 个）和各规则用的截断值"),
    (r"keeps (\d+), p ≥ (\S+)", r"保留 \1 个，p ≥ \2"), (r"keeps (\d+)", r"保留 \1 个"),
    # guidance
    (r"Classifier-free guidance: (.+)", r"无分类器引导：\1"),
    (r"“(.+)” on the shipped model; the unconditional branch sees only “(.+)”; γ > 1 boosts what the prompt adds",
     r"自带模型上的“\1”；无条件分支只看到“\2”；γ > 1 放大提示词带来的变化"),
    (r"with the prompt \(γ = (\S+)\)", r"带提示词（γ = \1）"),
    # KV cache
    (r"The KV cache on the shipped model: (\d+) left-padded prompts, prefill then (\d+) greedy steps",
     r"自带模型上的 KV cache：\1 个左填充的提示词，先 prefill，再贪心 \2 步"),
    (r"one slot per position per row, in each of the L = (\d+) layers \(keys and values (.+)\); a pad slot is written too, "
     r"and masked", r"每行每个位置一个槽，L = \1 层每层都有（key 和 value 的形状 \2）；pad 的槽也写入，但被遮住"),
    (r"slot (\d+)", r"槽 \1"), (r"call (\d+): prefill, T = (\d+) tokens in one pass", r"第 \1 次调用：prefill，T = \2 个词元一次算完"),
    (r"call (\d+)", r"第 \1 次调用"), (r"row (\d+)", r"第 \1 行"), (r"pos (\d+)", r"位置 \1"),
    (r"position ids = cumsum\(mask\) − 1, pads set to 1: each row's first real token is at position 0, so the padded row "
     r"is encoded as if it had no pads", r"位置编号 = cumsum(mask) − 1，pad 处设为 1：每行第一个真实词元的位置是 0，"
                                          r"所以有填充的行编码起来就像没有填充一样"),
    (r"per layer, after each call: keys and values \(B, H, S, D\); S grows by the tokens fed \(one column per slot; the "
     r"call's new columns coloured\)", r"每层在每次调用之后：key 和 value (B, H, S, D)；S 随送入的词元增长"
                                        r"（每个槽一列；本次调用新增的列上色）"),
    (r"call (\d+) \(prefill\): (\d+) tokens × (\d+) rows", r"第 \1 次调用（prefill）：\2 个词元 × \3 行"),
    (r"call (\d+) \(decode\): (\d+) token × (\d+) rows", r"第 \1 次调用（解码）：\2 个词元 × \3 行"),
    (r"(\d+) layers × K, V of shape", r"\1 层 × K、V，形状"), (r"(\(.*\)) each", r"各为 \1"),
    (r"without a cache every step would run all S positions through every layer again; with it a decode step runs 1 "
     r"position and attends over the S cached keys",
     r"没有 cache 时，每一步都要让全部 S 个位置再过一遍每一层；有了它，解码的一步只算 1 个位置，再对 S 个缓存的 key 做注意力"),
    (r"row (\d+): (.+)", r"第 \1 行：\2"),
    # KV cache reorder
    (r"(KVCache\.reorder\(\[.*\]\)): row i takes old row beam_idx\[i\]", r"\1：第 i 行取旧的第 beam_idx[i] 行"),
    (r"old row \[(.+)\] is dropped \(its beam lost\); old row (\d+) is copied twice \(two beams now share its history\)",
     r"旧的第 \1 行被丢掉（它的 beam 落选）；旧的第 \2 行被复制两份（两条 beam 现在共享它的历史）"),
    # speculative decoding
    (r"Prompt lookup on the shipped model: (\d+) new tokens in (\d+) model calls \(greedy needs (\d+)\)",
     r"自带模型上的 prompt lookup：\2 次模型调用生成 \1 个新词元（贪心需要 \3 次）"),
    (r"each call: draft ≤ (\d+) tokens that followed the last (\d+) \(else (\d+)\) tokens earlier in the text → one "
     r"forward pass over them → keep the agreeing prefix \+ 1",
     r"每次调用：草稿是文本前面跟在最后 \2 个（否则 \3 个）词元之后的 ≤ \1 个词元 → 对它们做一次前向计算 → 保留一致的前缀 + 1"),
    (r"model's own token \(\+1\)", r"模型自己的词元（+1）"), (r"call (\d+): \+(\d+)", r"第 \1 次调用：+\2"),
    (r"neither the last (\d+) tokens nor the last one occurred before: (\S+) drafts token (\d+)",
     r"最后 \1 个词元和最后一个词元之前都没出现过：\2 的草稿是词元 \3"),
    (r"\(a draft is kept only if it equals the model's argmax at its position, in float32: a near-tie could flip, see the "
     r"page\)\. With no earlier match, (\S+) drafts token (\d+) \(“(.+)”\)",
     r"（草稿只有等于模型在该位置的 argmax（float32）时才保留：接近并列时可能翻转，见该页）。前文没有匹配时，\1 的草稿是词元 \2（“\3”）"),
    # temperature / repetition penalty panels
    (r"repetition_penalty = (\S+)", r"repetition_penalty = \1"),    # From GPT-2 to Llama (tools/pictures/llama_pictures.py)
    (r"Grouped-query attention and the KV cache of the tiny Llama", r"分组查询注意力与小 Llama 的 KV cache"),
    (r"GQA: (\d+) query heads share (\d+) key/value heads \(n_rep = (\d+)\)", r"GQA：\1 个查询头共享 \2 个键/值头（n_rep = \3）"),
    (r"q head (\d+)", r"q 头 \1"), (r"kv head (\d+)", r"kv 头 \1"), (r"(\d+) kv heads", r"\1 个 kv 头"),
    (r"repeat_kv copies kv head (\d+) for q heads (\d+), (\d+) and kv head (\d+) for q heads (\d+), (\d+)",
     r"repeat_kv 把 kv 头 \1 复制给 q 头 \2、\3，把 kv 头 \4 复制给 q 头 \5、\6"),
    (r"after the cache: the cache stores the key/value heads only", r"缓存之后：缓存只存键/值头"),
    (r"KV cache after a (\d+)-token prefill \(KiB\)", r"预填充 \1 个词元之后的 KV cache（KiB）"),
    (r"(\d+) layers x keys and values x \((.+)\) float32",
     lambda m: f"{m.group(1)} 层 × 键和值 × ({m.group(2).replace('heads', '头数')}) float32"),
    (r"RMSNorm against LayerNorm on a hidden state of the tiny Llama", r"小 Llama 一个隐藏状态上的 RMSNorm 与 LayerNorm"),
    (r"LayerNorm and RMSNorm of the embedding of “(.+)” \(gain 1, no bias\)", r"“\1”的嵌入向量的 LayerNorm 与 RMSNorm（增益 1，无偏置）"),
    (r"the input of layer (\d+)'s first RMSNorm: mean (\S+), standard deviation (\S+), root mean square (\S+)",
     r"第 \1 层第一个 RMSNorm 的输入：均值 \2，标准差 \3，均方根 \4"),
    (r"value", r"值"), (r"difference", r"差"), (r"activation", r"激活值"),
    (r"LayerNorm: \(x - mean\) / std", r"LayerNorm：(x − 均值) / 标准差"), (r"RMSNorm: x / rms", r"RMSNorm：x / 均方根"),
    (r"LayerNorm - RMSNorm: at most (\S+) \(values reach (\S+)\); nearly the same for every entry: -mean / std",
     r"LayerNorm − RMSNorm：至多 \1（数值最大到 \2）；每一项都几乎相同：−均值 / 标准差"),
    (r"entry i of the hidden state \(E = (\d+)\)", r"隐藏状态的第 i 项（E = \1）"),
    (r"RoPE on the tiny Llama: a query rotated by position; scores depend on distance only",
     r"小 Llama 上的 RoPE：查询向量随位置旋转；分数只取决于距离"),
    (r"RoPE: head (\d+)'s query of “(.+)” at positions (\d+) to (\d+) \(D = (\d+), theta = (\d+)\)",
     r"RoPE：第 \1 个头上“\2”的查询向量，位置 \3 到 \4（D = \5，θ = \6）"),
    (r"pair \((\d+), (\d+)\)", r"第 (\1, \2) 对"), (r"theta = (\S+) rad / position", r"θ = \1 rad / 位置"),
    (r"entry i \(right\) against i \+ D/2 \(up\)", r"第 i 项（右）对 i + D/2（上）"),
    (r"red: position 0\. The fastest pair turns 1 radian per position, the slowest barely moves;",
     r"红色：位置 0。最快的一对每个位置转 1 弧度，最慢的几乎不动；"),
    (r"every position keeps the length: (\S+) to (\S+)", r"每个位置的长度都不变：\1 到 \2"),
    (r"distance n - m \(tokens\)", r"距离 n − m（词元）"), (r"score q·k / √D", r"分数 q·k / √D"),
    (r"query “(.+)”, key “(.+)”", r"查询“\1”，键“\2”"),
    (r"key at position (\d+) \(wide blue\) or (\d+) \(orange\):", r"键在位置 \1（宽蓝线）或 \2（橙线）："),
    (r"the same curve, whatever the offset", r"无论偏移多少，曲线都相同"),
    (r"SiLU, the gate of SwiGLU, against GPT-2's GELU", r"SwiGLU 的门 SiLU 与 GPT-2 的 GELU"),
    (r"SwiGLU's gate: silu\(z\) = z·sigmoid\(z\), against GPT-2's gelu_new", r"SwiGLU 的门：silu(z) = z·sigmoid(z)，对比 GPT-2 的 gelu_new"),
    (r"dots: the (\d+) gate inputs z = \(h Wg\)_j of layer (\d+) for the token “(.+)”; (\S+) % below -2 \(gate nearly shut\), (\S+) % above 2",
     r"圆点：词元“\3”在第 \2 层的 \1 个门输入 z = (h Wg)_j；\4 % 低于 -2（门几乎关闭），\5 % 高于 2"),
    (r"silu \(Llama's gate\)", r"silu（Llama 的门）"), (r"gelu_new \(GPT-2\)", r"gelu_new（GPT-2）"),
]
_COMPILED = [(re.compile(p), r) for p, r in PATTERNS]


def translate(label: str) -> str:
    """The Chinese label for an English one (see the module docstring); unknown labels are returned unchanged."""
    if label in EXACT:
        return EXACT[label]
    for pattern, replacement in _COMPILED:
        match = pattern.fullmatch(label)
        if match:
            return replacement(match) if callable(replacement) else match.expand(replacement)
    return label
