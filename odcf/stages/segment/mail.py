"""Mail and chat in the segmenter: an email's header lines, quoted replies and their attribution,
speaker labels of transcripts and chat exports (with their time stamps), and the turns of a chat
whose messages run over paragraphs."""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from odcf.stages.segment.lines import FENCE_RE, HEADING_RE, Piece
from odcf.textutil import ROLE_WORDS

#: The field names of an email's header ("From: Lina Park", "Sent: 3 June 2024 10:14").
MAIL_FIELDS = r"(?i:from|to|cc|bcc|date|sent|subject|reply-to)"
#: A time of day in a chat export: "14:02", "14:02:11", "2:02 PM", with a date in brackets ("[2024-05-03 14:02]").
TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[AaPp][Mm])?"
#: A day as WhatsApp writes it before the time: "03/05/2024, ", "3/5/24, ".
DMY = r"\d{1,2}/\d{1,2}/\d{2,4},[ \t]"
BRACKETED_TIME = r"\[(?:\d{4}-\d{2}-\d{2}[ T]|" + DMY + r")?" + TIME + r"\]"
#: A chat export's time stamp before the speaker ("[14:02] ", "[2024-05-03 14:02] ", "14:02 ", and
#: WhatsApp's "03/05/2024, 14:02 - " and "[3/5/24, 2:23:11 PM] "), not before a log level:
#: "[2024-05-15 10:02:11] INFO worker: started" is a log line, not a message.
#: A log line's level, in capitals.
LOG_LEVELS = r"TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|CRIT|SEVERE"
STAMP = (r"(?:" + BRACKETED_TIME + "|" + DMY + TIME + r"[ \t]+-|" + TIME + r")[ \t]+"
         r"(?!(?:" + LOG_LEVELS + r")\b)")
#: What opens a line of a tool's output the way a speaker opens a message, and is no speaker: a log
#: level in capitals or, as compilers write it, in lower case ("INFO: This could take a while.",
#: "error: could not compile", "note: …"; a person named Tip, Alert or Note stays a speaker), a
#: traceback's lines ("Traceback (most recent call last):", "Caused by: …", "During handling of …:")
#: and an exception's class ("RuntimeError: database unavailable").
#: Taken for a speaker, its words were written before an unrelated sentence delivered alone
#: ("Traceback (most recent call last): During handling of the above exception, …").
NOT_SPEAKER = (r"(?:" + LOG_LEVELS + r"|PANIC|EMERG"
               r"|trace|debug|info|warn|warning|error|fatal|note|help|hint)(?:[ \t]*\([^()\n]*\))?:"
               r"|(?:Traceback|Stack ?trace|Caused by|During handling|Exception)\b[^:\n]{0,40}:"
               r"|[A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)(?:[ \t]*\([^()\n]*\))?:")
#: An agent log's role tag in brackets, without a colon: "[user]", "[assistant]", "[system]",
#: "[assistant -> get_order]" (a tool call), "[tool get_order]" (its result); a role word, then maybe
#: the tool's name. "[Note]" or "[2]" is no role.
ROLE_TAG = (r"\[(?i:" + ROLE_WORDS + r")"
            r"(?:[ \t]*(?:->|→|:)[ \t]*[\w.\-]{1,40}|[ \t]+[\w.\-]{1,40})?\]")
#: A speaker label opening a line of a transcript or chat log: "Professor E:", "PhD C:", "Dr. Kim:",
#: "SPEAKER_01:", "user:", "dana (dba):" (up to four words, the first capitalised, or one lower-case
#: word; a role in brackets), after a time stamp or before one ("priya [14:06]:"); an email header
#: field ("To: Sam Ortega") is not one, nor a log level or a traceback's line (:data:`NOT_SPEAKER`).
#: Or an agent log's role tag (:data:`ROLE_TAG`, group ``tag``). Group 1 is the label up to its colon
#: (or the tag); the speaker is group ``name`` and the colon, or the tag (see :func:`speaker_of`).
#: A tool's result labelled with the tool's name, as odcf's handoff writes it and tau-bench transcripts do:
#: "tool:get_reservation_details:", "function:search:" (the speaker is the whole label, its name included).
TOOL_LABEL = r"(?i:tool|function):[\w.\-]{1,64}"
#: An agent's tool call labelled without a colon: "assistant [tool call] cancel_reservation {…}" (tau-bench
#: transcripts): the agent speaks, not the speaker of the line above (QA s34: it was delivered as "user: …").
CALL_TAG = r"(?i:assistant|agent|ai|model|bot)[ \t]+\[(?i:tool|function)[ _\-]?calls?\]"
LABEL = (r"^[ \t]{0,3}(?:" + STAMP + r")?(?!" + MAIL_FIELDS + r":)(?!" + NOT_SPEAKER + r")"
         r"((?P<name>" + TOOL_LABEL + r"|(?:[A-Z][\w'’.\-]{0,24}(?: [A-Z0-9][\w'’.\-]{0,24}){0,3}"
         r"|[a-z][\w\-]{0,20})(?: \([^()\n]{1,24}\))?)(?:[ \t]+" + BRACKETED_TIME + r")?:"
         r"|(?P<tag>" + ROLE_TAG + r":?|" + CALL_TAG + r"))")
SPEAKER_RE = re.compile(LABEL + r"[ \t]+\S")
#: A line that opens with a role tag ("[user] Thanks.", "[tool get_order] {…}"): a new turn of an agent
#: log even right under another message's line (a tag is never the next line of a sentence).
ROLE_LINE_RE = re.compile(r"^[ \t]{0,3}(?:" + STAMP + r")?" + ROLE_TAG + r":?[ \t]+\S")
#: How a line ends when the next may open a turn with a role tag: a sentence's end, a JSON value's
#: close, a colon. A line ending mid-sentence goes on in the next ("… edit the log_dir key in the" /
#: "[system] section; …" is one sentence).
TURN_END_RE = re.compile(r"[.!?:;}\])\"'”’…。！？]\s*$")


def opens_turn(lines: list[tuple[int, int, str]], j: int) -> bool:
    """Whether line *j* opens a turn of an agent log with a role tag (:data:`ROLE_LINE_RE`): it
    does, unless the line above it ends mid-sentence."""
    if not ROLE_LINE_RE.match(lines[j][2]):
        return False
    above = lines[j - 1][2] if j else ""
    return not above.strip() or TURN_END_RE.search(above) is not None or ROLE_LINE_RE.match(above) is not None
#: A chat line that opens with a time stamp ("[14:12] dana (dba): NO."): a message, not a line of a
#: log whose lines share a prefix, nor a numbered listing ("14:" is not line 14).
STAMPED_SPEAKER_RE = re.compile(r"^[ \t]{0,3}" + STAMP + LABEL[1:] + r"[ \t]+\S")
#: Lines in a row that open with a speaker label make a transcript: each line is its own paragraph.
SPEAKER_RUN = 2
#: A line of an email's header: a field and its value (the field maybe in bold: "**From:** Marcus Hale").
MAIL_FIELD_RE = re.compile(r"^[ \t]{0,3}(?:\*\*|__)?(" + MAIL_FIELDS + r")(?:\*\*|__)?:(?:\*\*|__)?[ \t]*\S")
#: The line that opens a message quoted whole below a reply ("-----Original Message-----").
MAIL_SEP_RE = re.compile(r"^[ \t]*(?:-{2,}[ \t]*(?i:original message|forwarded message)[ \t]*-{2,}"
                         r"|(?i:begin forwarded message):)\s*$")
#: The header fields that a message's body is delivered with (the others may be left out).
MAIL_HEAD_FIELDS = frozenset({"from"})
#: The quote marker opening a line of a quoted reply: "> ", ">> ", "> > ".
QUOTE_RE = re.compile(r"^[ \t]{0,3}>(?:[ \t]?>)*[ \t]?")
#: A quote's attribution: "On 2024-05-31 Raj Menon wrote:", "Am 3. Juni schrieb Lina Park:".
ATTRIBUTION_RE = re.compile(r"^.{0,300}\b(?:wrote|writes|schrieb|a écrit|escribió)[ \t]?:\s*$", re.DOTALL)
#: A message's greeting on its own: "Hi Daniel,", "Dear all,", "Hello,", "Dear Sir or Madam,", "Good morning
#: team!" (after it only names: capitalised words, or "all", "team", "everyone" …).
_NAME = r"(?:[A-Z\u00C0-\u00D6\u00D8-\u00DE][\w'’.\-]*|(?i:all|team|everyone|everybody|folks|guys|there|both|colleagues|sir|madam|or|and|&))"
_GREETING = (r"(?i:hi|hello|hey|hiya|dear|greetings|good[ \t]+(?:morning|afternoon|evening)|morning)"
             r"(?:[ \t]+" + _NAME + r"){0,4}[ \t]*[,!:]?")
#: A message's sign-off on its own: "Regards,", "Best,", "Kind regards", "Thanks,", "Thank you!", "Cheers",
#: "Yours sincerely," (maybe followed by up to two lines of a name: "Regards,\nMarta").
_SIGN_OFF = (r"(?i:(?:(?:best|kind|warm|warmest|many|with[ \t]+(?:best|kind|warm))[ \t]+)?(?:regards|wishes|thanks)"
             r"|thanks?[ \t]+you(?:[ \t]+(?:so|very)[ \t]+much)?|thanks[ \t]+(?:again|in[ \t]+advance)|cheers|best"
             r"|all[ \t]+the[ \t]+best|sincerely|yours(?:[ \t]+(?:sincerely|faithfully|truly))?|respectfully"
             r"|take[ \t]+care|rgds|br|talk[ \t]+soon|speak[ \t]+soon)[ \t]*[,.!]?")
_NAME_LINE = r"(?:--?[ \t]*)?" + _NAME + r"(?:[ \t]+" + _NAME + r"){0,3}[ \t]*"
#: A mobile mail program's signature: "Sent from my iPhone", "Get Outlook for Android".
_SENT_FROM = r"(?i:sent[ \t]+from[ \t]+my[ \t]+[\w .\-]{1,40}|get[ \t]+outlook[ \t]+for[ \t]+(?:ios|android))[ \t]*\.?"
#: A Chinese message's greeting on its own (QA s31: "王丽你好，" over Kevin's message was delivered as
#: its only line, where "Hi Kevin," went only with a part of its message): "王丽你好，", "您好，", "你好！",
#: "王经理您好：", "Kevin你好，", "尊敬的客户：", "亲爱的李娜：", "各位好，", "大家好！", "各位同事：", "早上好！".
#: The name before 你好/您好 is up to four Han characters (a name, maybe with its title: "王丽", "王经理",
#: "李总") or a capitalised Latin name, so a clause ending in 你好 ("这个方案对你好，") is none; after
#: 尊敬的/亲爱的 up to eight ("尊敬的王建国先生："). A segment is one only when it holds nothing else.
_HAN = r"[\u3400-\u4dbf\u4e00-\u9fff]"
_LATIN_NAME = r"[A-Z][\w'’.\-]*(?:[ \t]+[A-Z][\w'’.\-]*){0,2}"
_ZH_NAME = r"(?:" + _HAN + r"[" + _HAN[1:-1] + r"·]{0,3}|" + _LATIN_NAME + ")"
_ZH_ADDRESSEE = r"(?:" + _HAN + r"[" + _HAN[1:-1] + r"·]{0,7}|" + _LATIN_NAME + ")"
_ZH_GREETING = (r"(?:(?:尊敬的|亲爱的)[ \t]*" + _ZH_ADDRESSEE + r"|(?:" + _ZH_NAME + r"[ \t]*)?[你您]好(?:们)?"
                r"|(?:各位|大家)(?:同事|同仁|朋友们?|领导)?(?:好|早上好|上午好|下午好|晚上好)?|早上好|上午好|下午好|晚上好)"
                r"[ \t]*[，,！!：:。]?")
#: A Chinese sign-off on its own: "谢谢！", "多谢，", "祝好！", "此致", "敬礼！", "此致\n敬礼！", "顺祝商祺"
#: (maybe over up to two lines of a name: "谢谢！\n王丽").
_ZH_SIGN_OFF = (r"(?:(?:非常)?(?:谢谢|感谢)(?:您|你)?|多谢|祝好|此致(?:[ \t]*[，,]?\s*敬礼)?|敬礼|顺祝商祺|顺颂商祺|祝商祺)"
                r"[ \t]*[，,！!。.]?")
_ZH_NAME_LINE = r"(?:--?[ \t]*)?" + _ZH_NAME + r"[ \t]*"
#: A segment that holds nothing but a greeting, a sign-off (with the name under it) or a mobile signature,
#: its quote markers aside: nothing a reader needs (odcf.stages.rank ranks it below every other segment,
#: odcf.stages.budget delivers it only with a part of its message's content).
PLEASANTRY_RE = re.compile(
    r"[ \t]*(?:" + _GREETING + "|" + _ZH_GREETING + "|" + _SENT_FROM + "|" + _SIGN_OFF
    + r"(?:[ \t]*\n[ \t]*" + _NAME_LINE + r"){0,2}(?:\s*\n[ \t]*" + _SENT_FROM + r")?"
    + "|" + _ZH_SIGN_OFF + r"(?:[ \t]*\n[ \t]*" + _ZH_NAME_LINE + r"){0,2}(?:\s*\n[ \t]*" + _SENT_FROM + r")?)\s*")


def pleasantry(text: str) -> bool:
    r"""Whether *text* (a segment's) holds nothing but a greeting, a sign-off or a mobile signature
    (:data:`PLEASANTRY_RE`), each line's quote markers aside.

    >>> [pleasantry(t) for t in ("Hi Daniel,", "> Best,\n> Daniel", "Regards,\nMarta", "Sent from my iPhone")]
    [True, True, True, True]
    >>> [pleasantry(t) for t in ("Thanks, the tracking number works.", "Hey can you check this", "Best price: EUR 40.")]
    [False, False, False]
    """
    if not text.strip() or len(text) > 200:
        return False
    return PLEASANTRY_RE.fullmatch("\n".join(QUOTE_RE.sub("", line, count=1) for line in text.split("\n"))) is not None


#: The most characters a piece of quoted lines holds when its lines end no sentence (a hard-wrapped
#: quote without full stops would otherwise become pieces of 1,200 characters, all or nothing).
QUOTE_PIECE_CHARS = 400
#: A quoted line that ends a sentence (so the next quoted line starts a new piece).
QUOTE_END_RE = re.compile(r"[.!?:;。！？；][\"'”’)\]]*\s*$")


#: A line that opens with a field name of its own ("Invoice date: …", "**Terms:** …"): under a
#: labelled line whose value ends no sentence ("Buyer: Qingdao Haichuan …") it is the next field of a
#: form, never delivered after that label (it wrote "Buyer: Contract: HC-2024-0415.").
FIELD_OPEN_RE = re.compile(r"[ \t]*(?:\*\*|__)?[A-Za-z][\w'’./&-]*(?: [\w'’./&()-]+){0,3}(?:\*\*|__)?:(?:\*\*|__)?[ \t]+\S")


def speaker_meta(label: re.Match[str] | None, offset: int) -> dict[str, Any] | None:
    """Meta of a piece *offset* characters into a transcript line opened by *label*: its speaker, so
    that a sentence delivered without the line's first one is rendered after the label
    (odcf.render.join_segments), and ``opens_line`` for the piece that holds the label itself."""
    if label is None:
        return None
    meta: dict[str, Any] = {"speaker": speaker_of(label)}
    if offset < label.end(1):
        meta["opens_line"] = True
    return meta


def speaker_of(label: re.Match[str]) -> str:
    """The speaker of a label: its name and colon, without a time stamp ("[14:12] dana (dba):" -> "dana (dba):"),
    or a role tag as written ("[assistant -> get_order]")."""
    return label.group("tag") or label.group("name") + ":"


#: Lines of one message without a label of their own, between two labelled lines of a transcript.
CONTINUATION_LINES = 3
#: A line that is a speaker label alone ("tool:"), its message on the lines below.
LABEL_ONLY_RE = re.compile(LABEL + r"[ \t]*$")


#: A speaker's name that is a chat's role ("user:", "Assistant:"): a chat's label even where the
#: messages are cut by headings.
ROLE_NAME_RE = re.compile(r"(?:(?i:" + ROLE_WORDS + r")(?:[ \t]*\([^()\n]*\))?|" + TOOL_LABEL + "):")


def chat_turns(lines: list[tuple[int, int, str]], headings: Sequence[int] = (), *,
               chat: bool = False) -> list[tuple[int, int, str | None]]:
    """The turns of a chat log whose messages are paragraphs: ``(start offset, end of the label,
    label)`` of each paragraph that opens with a speaker's label, when at least three do, a label
    comes back, and some paragraph between them opens without one (a message with a list or a
    second paragraph), every label is a role's or stamped ("user:" / "assistant:" messages one
    paragraph each, the way a chat is pasted with blank lines between), or the source is declared
    a chat (*chat*: ``kind: chat``, "dana:" / "alex:" one paragraph each); and ``(offset, offset, None)`` of each heading (at *headings*, the offsets of
    the segmenter's heading pieces) that ends a turn: one after the chat's last labelled paragraph
    (a section of the document after the transcript) unless its speaker is marked as below. A heading
    with a speaker's paragraph still to come is a part of the message it is in (an agent's "##
    Steps"), as the paragraphs under it are. Else [] (a transcript of one line a turn is handled
    line by line).

    A label is a speaker's when speakers alternate under one heading (it comes back after another
    label's paragraph with no heading between: "Alice:", "Bob:", "Alice:"), or it has a time stamp,
    a role tag or a role's name ("[14:02] dana:", "[user]", "assistant:"); a label that opens a
    paragraph once under each of several headings ("Status: green." under "## Team A", "Status:
    amber." under "## Team B") is a field of a report, no speaker."""
    heads = sorted(headings)
    # each heading (label None) and each paragraph's first line (its label, or "" for none), with the
    # number of the section (the part between two headings) it is in
    found: list[tuple[int, int, str | None, int]] = []
    section = h = 0
    marked: set[str] = set()  # labels with a stamp, a role tag or a role's name
    for k, (ls, _le, line) in enumerate(lines):
        if h < len(heads) and heads[h] <= ls + len(line):
            while h < len(heads) and heads[h] <= ls + len(line):
                h += 1
            section += 1
            found.append((heads[h - 1], heads[h - 1], None, section))
            continue
        if not line.strip() or (k and lines[k - 1][2].strip() and not opens_turn(lines, k)):
            continue  # not the first line of a paragraph (nor a line opening with a role tag)
        m = SPEAKER_RE.match(line) or LABEL_ONLY_RE.match(line)
        label = speaker_of(m) if m else ""
        if m and (m.group("tag") or STAMPED_SPEAKER_RE.match(line) or ROLE_NAME_RE.fullmatch(label)):
            marked.add(label)
        found.append((ls, ls + m.end(1) if m else ls, label, section))
    speakers = set(marked)
    last: dict[int, str] = {}
    seen: set[tuple[int, str]] = set()
    for _start, _end, label, sec in found:
        if not label:
            continue
        if (sec, label) in seen and last[sec] != label:
            # a label back after another's paragraph under one heading: speakers alternate
            speakers.update(lb for sc, lb in seen if sc == sec)
        seen.add((sec, label))
        last[sec] = label
    # whether the next labelled paragraph after each entry is a speaker's (the chat goes on below it)
    goes_on: list[bool] = []
    ahead = False
    for _start, _end, label, _sec in reversed(found):
        goes_on.append(ahead)
        if label:
            ahead = label in speakers
    goes_on.reverse()
    turns: list[tuple[int, int, str | None]] = []
    unlabelled_inside = False
    for (start, end, label, _sec), more in zip(found, goes_on):
        if label is not None and label in speakers:
            turns.append((start, end, label))
        elif turns and turns[-1][2] is not None:
            if label is None:
                if not (more or turns[-1][2] in marked):
                    turns.append((start, start, None))  # a heading after the chat's last turn ends it
            else:
                unlabelled_inside = True  # a paragraph of the turn without a label (or a field's)
    labels = [t[2] for t in turns if t[2] is not None]
    if len(labels) < 3 or len(set(labels)) == len(labels):
        return []
    if not (unlabelled_inside or chat or marked.issuperset(labels)):
        # labelled paragraphs only ("Note: …", "Tip: …", "Note: …"), none of them a role's: a
        # document's notes, no chat
        return []
    return turns


def in_turn(piece: Piece, turns: list[tuple[int, int, str | None]], starts: list[int]) -> Piece:
    """*piece* with the speaker label and number of the chat turn it is in (odcf.render writes the
    label before a piece delivered without its turn's first one); as it is when it is in no turn
    (before the first, or after a heading that ends one) and when it is a heading, which is never
    written after a label (odcf.render writes the label after it, before the turn's next piece)."""
    k = bisect.bisect_right(starts, piece.start) - 1
    if k < 0 or turns[k][2] is None or piece.kind == "heading":
        return piece
    _, label_end, label = turns[k]
    meta = {key: v for key, v in (piece.meta or {}).items() if key not in ("speaker", "opens_line")}
    meta.update({"speaker": label, "turn": k})
    if piece.start < label_end:
        meta["opens_line"] = True
        if piece.end <= label_end:
            meta["label_only"] = True  # "tool:" on a line of its own: the budget delivers it only with its turn
    return Piece(piece.start, piece.end, piece.kind, piece.paragraph, meta)


def mail_header_run(lines: list[tuple[int, int, str]], i: int) -> int:
    """End index (exclusive) of an email's header from line *i*: two field lines or more, one of them
    ``From:``, with their folded lines, maybe after a line such as "-----Original Message-----";
    else *i*."""
    if not (MAIL_FIELD_RE.match(lines[i][2]) or MAIL_SEP_RE.match(lines[i][2])):
        return i
    n = len(lines)
    j = i + 1 if MAIL_SEP_RE.match(lines[i][2]) else i
    fields: list[str] = []
    sender = ""
    while j < n:
        m = MAIL_FIELD_RE.match(lines[j][2])
        if m:
            fields.append(m.group(1).lower())
            if fields[-1] == "from":
                sender = lines[j][2]
        elif not (fields and lines[j][2][:1] in " \t" and lines[j][2].strip()):
            break
        j += 1
    # an email's header, not a period ("From: 1 June 2024 / To: 30 June 2024"): a sender that opens
    # with a digit is a date or a number, unless it has an address. (A route, "From: Berlin (BER) /
    # To: Munich (MUC)", reads as a header: its From line then goes with the text under it.)
    value = sender.split(":", 1)[1].strip() if ":" in sender else ""
    mail = "from" in fields and ("@" in sender or not value[:1].isdigit())
    # a record of labelled lines that goes on with other labels ("**Flight:** BA 117" under a leg's
    # "**From:** / **To:** / **Date:**") is a form, not an email's header
    if mail and j < n and "@" not in sender and _OTHER_FIELD_RE.match(lines[j][2]):
        return i
    return j if len(fields) >= 2 and mail else i


#: A labelled line that is no email header field ("**Flight:** BA 117", "Seat: 32A").
_OTHER_FIELD_RE = re.compile(r"^[ \t]{0,3}(?:\*\*|__)?[A-Z][\w -]{0,24}(?:\*\*|__)?:(?:\*\*|__)?[ \t]+\S")


def speaker_run(lines: list[tuple[int, int, str]], i: int, *, limit: int | None = None) -> int:
    """End index (exclusive) of the lines from *i* on that each open with a speaker label (looking
    at no more than *limit* lines)."""
    end = len(lines) if limit is None else min(len(lines), i + limit)
    j = i
    while j < end:
        if SPEAKER_RE.match(lines[j][2]):
            j += 1
            continue
        # the next lines of a message, without a label of their own, between two labelled lines
        k = j
        while (k < end and k - j < CONTINUATION_LINES and lines[k][2].strip()
               and not SPEAKER_RE.match(lines[k][2]) and not HEADING_RE.match(lines[k][2])
               and not FENCE_RE.match(lines[k][2])):
            k += 1
        if j > i and j < k < end and SPEAKER_RE.match(lines[k][2]):
            j = k
            continue
        break
    return j
