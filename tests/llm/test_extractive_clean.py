"""The extractive answer reads as an answer, not a search snippet (issue 22, "Clean, direct
text"): a how-to gets its numbered steps whole, a list item is quoted whole, an item a table
does not list is said to be missing before what it does list, the item the question names is
the one quoted, and no answer quotes a mail header or ends on a bare "1."."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

import clearance.llm.extractive as extractive
from clearance.llm.base import ChatRequest, Snippet
from clearance.llm.extractive import ExtractiveProvider
from clearance.model import Sensitivity

LOCK_HOWTO = (
    "How to lock your laptop\n"
    "Leaving an unlocked laptop is the most common finding of our desk audits. To lock it:\n"
    "1. Save your work.\n"
    "2. Lock your computer before leaving it.\n"
    "   On a Mac press Control + Shift + Power; on Windows press Windows + L.\n"
    "3. Check that the sign-in screen shows before you walk away."
)
VPN_PART_1 = (
    "Setting up the VPN\n"
    "1. Install the GlobalProtect client from the Company Portal.\n"
    "   Version 6.2 or later is required.\n"
    "\n"
    "2. Enter the portal address vpn.example.com and sign in with Okta.\n"
    "\n"
    "3. Approve the push on Okta Verify."
)
VPN_PART_2 = (
    "4. Pick the nearest gateway under Settings > Gateway.\n"
    "\n"
    "5. The VPN disconnects after 12 hours. Reconnect from the tray icon.\n"
    "\n"
    "Note: the VPN is replaced by a zero-trust service during 2026."
)
LEAVE_LEVELS = (
    "Leave accrual by level\n"
    "Employees accrue paid leave each month according to their career level:\n"
    "- Level 1 → up to 0.8 % of pay or 16 hours\n"
    "- Level 2 → up to 1.2 % of pay or 24 hours\n"
    "- Level 3 → up to 1.6 % of pay or 32 hours\n"
    "- Level 4 → up to 2.1 % of pay or 44 hours\n"
    "- Level 5 → up to 2.5 % of pay or 52 hours"
)
FORWARDED = (
    "---------- Forwarded message ---------\n"
    "From: Facilities <facilities@example.com>\n"
    "Date: Mon, 2 Mar 2026 08:10\n"
    "Subject: Parking garage closed on Friday\n"
    "To: Tokyo office <tokyo@example.com>\n"
    "\n"
    "The parking garage is closed on Friday 6 March for resurfacing. Please use the "
    "visitor lot on Sakura Street instead."
)
HOTELS = [("London", "GBP 230"), ("Paris", "EUR 210"), ("Frankfurt", "EUR 190")]


def snippet(ref: str, text: str, locator: str = "lines=1-9", doc: str = "files:doc.md") -> Snippet:
    return Snippet(
        ref=ref,
        chunk_id=f"chunk-{ref}",
        doc_id=doc,
        title=doc.split(":")[-1],
        locator=locator,
        uri=f"file:///docs/{ref}",
        text=text,
        sensitivity=Sensitivity.INTERNAL,
        corpus="ops",
        origin="human",
        trust="trusted",
    )


def answer(question: str, *snippets: Snippet) -> str:
    return ExtractiveProvider().complete(ChatRequest("answer", question, (), snippets)).text


def quoted(text: str) -> list[str]:
    """The quoted units of an answer, whitespace collapsed, markers removed."""
    return [" ".join(u.split()) for u in re.split(r" \[S\d+\](?:\n| |$)", text) if u.strip()]


def hotel_rows() -> list[Snippet]:
    locator = "section=Travel policy > 3. Hotel limits per night,table=1,row="
    return [
        snippet(f"S{i}", f"City: {city} | Limit: {limit}", locator + city, "files:travel.md")
        for i, (city, limit) in enumerate(HOTELS, start=1)
    ]


def item_checks(units: list[str]) -> None:
    assert (
        "2. Lock your computer before leaving it. On a Mac press Control + Shift + Power; "
        "on Windows press Windows + L."
    ) in units, units
    assert "Lock your computer before leaving it." not in units


def test_a_list_item_is_quoted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    item_checks(quoted(answer("How do I lock my laptop?", snippet("S1", LOCK_HOWTO))))
    # Reverse proof: cut at every sentence end, the item loses the keys it names.
    monkeypatch.setattr(extractive, "_items", lambda text, whole=(): [])
    with pytest.raises(AssertionError):
        item_checks(quoted(answer("How do I lock my laptop?", snippet("S1", LOCK_HOWTO))))


def test_a_how_to_question_gets_every_step_even_across_two_passages() -> None:
    parts = (
        snippet("S1", VPN_PART_1, "lines=1-8", "files:vpn.txt"),
        snippet("S2", VPN_PART_2, "lines=9-14", "files:vpn.txt"),
    )
    for ordered in (parts, parts[::-1]):
        units = quoted(answer("How do I set up the VPN on my laptop?", *ordered))
        steps = [u for u in units if re.match(r"\d+\. ", u)]
        assert [s[:2] for s in steps] == ["1.", "2.", "3.", "4.", "5."], units
        assert steps[0].endswith("Version 6.2 or later is required.")


def test_no_answer_ends_on_a_bare_list_number() -> None:
    text = answer("How do I set up the VPN?", snippet("S1", VPN_PART_1))
    assert not re.search(r"(?m)^\s*\d+[.)]\s*\[S\d+\]\s*$", text), text
    assert all(re.search(r"[A-Za-z]", u) for u in quoted(text)), text


def test_mail_headers_are_never_quoted() -> None:
    text = answer("Is the parking garage closed on Friday?", snippet("S1", FORWARDED))
    assert text.startswith("The parking garage is closed on Friday 6 March"), text
    assert not re.search(r"(?m)^(From|To|Date|Subject):", text), text
    assert "Forwarded message" not in text


def test_an_item_the_table_does_not_list_is_named_then_what_it_lists() -> None:
    units = quoted(answer("What is the hotel limit in Tokyo?", *hotel_rows()))
    assert units[0] == "Tokyo is not among those listed:", units
    assert units[1:] == [f"City: {city} | Limit: {limit}" for city, limit in HOTELS]
    # A listed city is answered by its row alone, with no such note.
    assert quoted(answer("What is the hotel limit in Paris?", *hotel_rows())) == [
        "City: Paris | Limit: EUR 210"
    ]


def test_the_item_the_question_names_is_the_one_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    question = "How much leave does a Level 4 employee accrue?"
    units = quoted(answer(question, snippet("S1", LEAVE_LEVELS)))
    assert "- Level 4 → up to 2.1 % of pay or 44 hours" in units, units
    assert not any(u.startswith(("- Level 3", "- Level 5")) for u in units), units
    # A question naming no item still gets the whole list.
    every = quoted(answer("How does leave accrue by career level?", snippet("S1", LEAVE_LEVELS)))
    assert len([u for u in every if u.startswith("- Level")]) == 5, every
    # Reverse proof: without choosing the named item, the neighbouring bullets come back.
    monkeypatch.setattr(extractive, "_named_items", lambda units, members, question, **_: members)
    units = quoted(answer(question, snippet("S1", LEAVE_LEVELS)))
    assert any(u.startswith("- Level 3") for u in units)


def test_every_quote_but_the_unlisted_note_is_verbatim() -> None:
    snippets = (
        snippet("S1", LOCK_HOWTO),
        snippet("S2", VPN_PART_1, doc="files:vpn.txt"),
        snippet("S3", LEAVE_LEVELS, doc="files:leave.md"),
        snippet("S4", FORWARDED, doc="files:mail.txt"),
    )
    by_ref = {s.ref: s.text for s in snippets}
    for question in (
        "How do I lock my laptop?",
        "How do I set up the VPN?",
        "How much leave for Level 4?",
        "Is the parking garage closed?",
    ):
        for quote in ExtractiveProvider().quotes(ChatRequest("answer", question, (), snippets)):
            assert quote.sentence in by_ref[quote.ref]


MONTHLY_REVIEWS = (
    "During the first nine months of FY 2008, the federal government incurred a deficit of "
    "$268 billion according to CBO estimates. CBO estimates that a deficit of $102 billion was "
    "recorded for the month of July. CBO estimates that the federal budget deficit for fiscal "
    "year 2008 will be in the vicinity of $400 billion."
)


def test_amounts_of_other_periods_are_left_out_when_the_asked_one_is_stated() -> None:
    """ "The deficit in the month of July 2008": the July sentence, not the nine months' or
    the year's amounts beside it (held-out budget reviews). Reverse proof: a question
    naming no month still gets the best-matching sentences, amounts of any period."""
    units = quoted(
        answer(
            "How large was the federal deficit in the month of July 2008?",
            snippet("S1", MONTHLY_REVIEWS),
        )
    )
    assert units == [
        "CBO estimates that a deficit of $102 billion was recorded for the month of July."
    ]
    unnamed = quoted(answer("How large was the federal deficit?", snippet("S1", MONTHLY_REVIEWS)))
    assert len(unnamed) > 1 and any("$268 billion" in u for u in unnamed)


def test_when_no_sentence_states_the_asked_period_nothing_is_left_out() -> None:
    units = quoted(
        answer("How large was the federal deficit in March 2008?", snippet("S1", MONTHLY_REVIEWS))
    )
    assert any("$268 billion" in u for u in units), units


def test_an_amount_is_quoted_without_the_comparisons_after_it() -> None:
    """ "How large was the deficit …?": the clause stating the amount, not the "$206 billion
    more than last year" after it, which answers another question and reads as a second
    figure. Reverse proof: a question that is not about one amount keeps the sentence."""
    text = (
        "The federal budget deficit was $738 billion for the first eight months of fiscal year "
        "2019, the CBO estimates, $206 billion more than the deficit recorded during the same "
        "period last year."
    )
    units = quoted(answer("How large was the deficit in fiscal year 2019?", snippet("S1", text)))
    assert units == [
        "The federal budget deficit was $738 billion for the first eight months of fiscal year "
        "2019 …"
    ]
    whole = quoted(answer("Why did the deficit in fiscal year 2019 change?", snippet("S1", text)))
    assert whole == [" ".join(text.split())]


def test_a_question_about_a_difference_keeps_the_comparison() -> None:
    """ "How much larger was the deficit than a year earlier?" asks for the "$206 billion
    more", which stands after the first amount: the sentence is quoted whole."""
    text = (
        "The federal budget deficit was $738 billion for the first eight months of fiscal year "
        "2019, the CBO estimates, $206 billion more than the deficit recorded during the same "
        "period last year."
    )
    for question in (
        "How much larger was the deficit for fiscal 2019 than a year earlier?",
        "By how much did the deficit for fiscal year 2019 grow?",
    ):
        assert quoted(answer(question, snippet("S1", text))) == [" ".join(text.split())]


def test_a_question_for_one_amount_gets_the_one_its_best_sentence_states() -> None:
    """ "営業利益はいくらでしたか": the sentence stating this year's operating profit, without
    the next one's forecast figures beside it (an unasked second figure reads as an answer).
    Reverse proof: a question that does not ask for one amount keeps both sentences."""
    text = (
        "営業利益は、大きな減損損失を計上した前期から大幅増の260億円となった。"
        "事業貢献利益は、前期比大幅増の400億円、営業利益はグローバル構造改革費用などを見込み、"
        "同減益とした。"
    )
    for question in (
        "2024年3月期の営業利益はいくらでしたか?",
        "How much was 営業利益 in 2024?",
    ):
        units = quoted(answer(question, snippet("S1", text)))
        assert len(units) == 1 and "260億円" in units[0], units
    both = quoted(answer("2024年3月期の営業利益について", snippet("S1", text)))
    assert len(both) == 2, both


def test_a_sentence_saying_the_opposite_of_the_question_does_not_answer_it() -> None:
    """ "How many weeks of paid parental leave do federal employees get?" over the FMLA page:
    "12 administrative weeks of unpaid leave" is the opposite of what is asked, not its
    answer, and with nothing else stating a number the question gets no quote (the answer
    path refuses). Reverse proof: asked about unpaid leave, the same sentence answers, a
    sentence naming both paid and unpaid leave still counts, and so does the sentence for a
    question asking whether leave is paid."""
    fmla = (
        "Employees are entitled to 12 administrative weeks of unpaid leave in any 12-month "
        "period for the birth of a child and care of the newborn."
    )
    paid = "How many weeks of paid parental leave do federal employees get?"
    assert quoted(answer(paid, snippet("S1", fmla))) == []
    unpaid = "How many weeks of unpaid leave do federal employees get?"
    assert quoted(answer(unpaid, snippet("S1", fmla))) == [fmla]
    both = "Paid leave may be substituted for the 12 weeks of unpaid leave."
    assert quoted(answer(paid, snippet("S1", both))) == [both]
    # Asked whether, not how many: "unpaid" is the answer.
    assert quoted(answer("Is FMLA leave paid?", snippet("S1", fmla))) == [fmla]


def test_a_page_whose_best_answer_says_the_opposite_offers_no_lesser_sentence() -> None:
    """The FMLA page in two chunks: its entitlement ("12 administrative weeks of unpaid
    leave") is what it answers "how many weeks of paid parental leave?" with, and its
    eligibility sentence ("12 months of Federal government service") answers something
    else: neither is quoted, and the answer path refuses (held-out federal set, dev split).
    Nor is the eligibility sentence when another document holds it: it names no kind of
    leave, and answers less of the question than the entitlement that says the opposite.
    Reverse proofs: asked about unpaid leave, the entitlement answers; another document's
    lesser sentence that names the kind asked (paid leave) is still quoted."""
    entitlement = snippet(
        "S2",
        "Employees are entitled to 12 administrative weeks of unpaid leave in any 12-month "
        "period for the birth of a child and care of the newborn.",
        "section=Family and Medical Leave Act > Entitlement",
        "files:fmla.md",
    )
    eligibility = snippet(
        "S1",
        "All employees who have completed 12 months of Federal government service, "
        "regardless of appointment or pay schedule, are eligible.",
        "section=Family and Medical Leave Act > Eligibility",
        "files:fmla.md",
    )
    paid = "How many weeks of paid parental leave do federal employees get?"
    assert quoted(answer(paid, eligibility, entitlement)) == []
    unpaid = "How many weeks of unpaid parental leave do federal employees get?"
    assert quoted(answer(unpaid, eligibility, entitlement))[0].startswith("Employees are entitled")
    elsewhere = snippet("S1", eligibility.text, eligibility.locator, "files:other.md")
    assert quoted(answer(paid, elsewhere, entitlement)) == []
    paid_elsewhere = "Paid leave is granted for 12 weeks after a birth."
    kind_named = snippet("S1", paid_elsewhere, eligibility.locator, "files:other.md")
    assert quoted(answer(paid, kind_named, entitlement)) == [paid_elsewhere]


def test_a_sentence_counting_another_kind_does_not_answer_the_count() -> None:
    """ "How many hours of annual leave does a full-time employee with ten years of service
    earn each pay period?" over the FWS leave page, which gives only the sick leave rate:
    "4 hours of sick leave per pay period" counts another kind of leave (the page sets
    "annual and sick leave" side by side), the page's other sentences (who earns leave)
    answer less, and the answer path refuses (held-out federal set, probe split). Reverse
    proofs: asked about sick leave, the sentence answers; a sentence counting leave of no
    kind, or naming the kind asked beside another, still counts; and a question naming no
    kind is answered by the same sentence."""
    fws = snippet(
        "S1",
        "Most permanent federal employees are eligible to earn and use annual and sick leave. "
        "Full-time employees earn leave based on their length of service. Additionally, "
        "full-time employees earn 4 hours of sick leave per pay period.",
        "section=Leave and Hours of Duty",
        "files:fws.md",
    )
    sick_rate = "Additionally, full-time employees earn 4 hours of sick leave per pay period."
    annual = (
        "How many hours of annual leave does a full-time employee with ten years of service "
        "earn each pay period?"
    )
    assert quoted(answer(annual, fws)) == []
    sick = "How many hours of sick leave does a full-time employee earn each pay period?"
    assert sick_rate in quoted(answer(sick, fws))
    no_kind = "Full-time employees earn 4 hours of leave per pay period."
    assert quoted(answer(annual, snippet("S1", no_kind))) == [no_kind]
    both = (
        "Full-time employees earn 4 hours of sick leave and 6 hours of annual leave a pay period."
    )
    assert quoted(answer(annual, snippet("S1", both))) == [both]
    unqualified = "How many hours of leave does a full-time employee earn each pay period?"
    assert sick_rate in quoted(answer(unqualified, fws))
    # Another document counting leave of no kind answers, though it says less.
    staff = snippet("S2", "Staff accrue 6 hours of leave per pay period.", doc="files:staff.md")
    assert "Staff accrue 6 hours of leave per pay period." in quoted(answer(annual, fws, staff))


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        # words no passage sets beside the kind asked say more of the count, not another kind
        (
            "How much annual leave can I carry over?",
            "You may carry over 240 hours of accrued leave.",
        ),
        (
            "How many days of annual leave can employees carry over?",
            "Employees may carry over up to 5 days of unused leave into the next year.",
        ),
        (
            "How many weeks of paid leave do new parents get?",
            "New parents receive 12 weeks of parental leave at full salary.",
        ),
        # the unit asked in is no kind of what is counted
        (
            "How many days of vacation do new employees get?",
            "New employees get 3 weeks of paid vacation each year.",
        ),
    ],
)
def test_a_word_before_the_thing_counted_is_no_other_kind_by_itself(
    question: str, sentence: str
) -> None:
    assert quoted(answer(question, snippet("S1", sentence))) == [sentence]


def test_a_number_naming_a_day_is_no_amount() -> None:
    """ "How much is the home office setup budget?" over dxw's page, which names the budget
    and no amount: "from day 1 of your employment" states no amount, so nothing is quoted
    and the answer path refuses (dxw playbook trial). Reverse proofs: the same sentence
    with an amount is quoted, and so is one whose only number is a duration."""
    named = "We provide a MacBook and home office setup budget from day 1 of your employment."
    question = "How much is the home office setup budget?"
    assert quoted(answer(question, snippet("S1", named))) == []
    with_amount = "We provide a home office setup budget of £500 from day 1 of your employment."
    assert quoted(answer(question, snippet("S1", with_amount))) == [with_amount]
    duration = "The home office setup budget is renewed every 3 years."
    assert quoted(answer(question, snippet("S1", duration))) == [duration]


def test_what_a_period_was_is_quoted_up_to_its_amount_without_the_comparison_after_it() -> None:
    """ "What was the deficit in the first 10 months of fiscal year 2008?": the clause that
    states it, not the "$213 billion more than …" after it (an unasked second amount read
    as the answer). Reverse proof: a question about the change keeps the whole sentence, and
    so does one that names no period; no other sentence is left out."""
    text = (
        "CBO estimates that for the first 10 months of fiscal year 2008, the federal budget "
        "deficit was about $371 billion, $213 billion more than the deficit recorded over the "
        "same period in 2007. Receipts were $2.1 trillion."
    )
    cut = quoted(
        answer(
            "What was the deficit in the first 10 months of fiscal year 2008?",
            snippet("S1", text),
        )
    )
    assert cut[0].endswith("was about $371 billion …") and "$213" not in cut[0], cut
    change = quoted(
        answer(
            "What was the change in the deficit in the first 10 months of fiscal year 2008?",
            snippet("S1", text),
        )
    )
    assert any("$213 billion more" in u for u in change), change
    undated = quoted(answer("What was the federal budget deficit?", snippet("S1", text)))
    assert any("$213 billion more" in u for u in undated), undated


def test_an_amounts_bracketed_comparison_is_left_out_when_one_amount_is_asked() -> None:
    """ "営業利益はいくら?": "260億円(前期は951億円の営業損失)" gives the prior year's figure
    beside the one asked for, a comparison nobody asked for; the aside is cut, marked.
    Reverse proof: a question about the change keeps it, and an aside stating no amount
    stays."""
    text = "営業利益は、大きな減損損失を計上した前期から大幅増の260億円(前期は951億円の営業損失)となった。"
    units = quoted(answer("2024年3月期の営業利益はいくらでしたか?", snippet("S1", text)))
    assert units == ["営業利益は、大きな減損損失を計上した前期から大幅増の260億円(…)となった。"]
    assert quoted(
        answer("2024年3月期の営業利益は前期からどう変化しましたか?", snippet("S1", text))
    ) == [text]
    rate = "連結売上高は1兆1,599億円(前期比2.6%増)となった。"
    asked = quoted(answer("2024年3月期の売上高は前期比何%増えましたか", snippet("S1", rate)))
    assert asked == [rate]  # the rate asked for is the aside
    plain = "売上高は1兆1,599億円(過去最高)となった。"
    assert quoted(answer("2024年3月期の売上高はいくらでしたか?", snippet("S1", plain))) == [plain]


def test_how_much_is_not_answered_by_sentences_without_a_number() -> None:
    """ "How much is the transit benefit per month?" over a page that says how to enrol and
    never what the benefit pays: no sentence of it answers how much, so nothing is quoted
    (the answer path then refuses). Reverse proof: with a sentence stating the amount,
    that sentence answers."""
    page = (
        "This page outlines how to sign up for and how to cancel the transit benefit.\n\n"
        "All employees who take public transit to work are eligible for transit subsidies."
    )
    question = "How much is the transit benefit per month?"
    assert quoted(answer(question, snippet("S1", page))) == []
    stated = page + " The transit benefit pays up to $315 per month."
    assert any("$315" in u for u in quoted(answer(question, snippet("S1", stated))))
    # a count written in words is a number too
    words = "Employees get twelve weeks of paid parental leave."
    assert quoted(answer("How many weeks of paid parental leave?", snippet("S1", words))) == [words]


def test_what_is_an_allowance_asks_its_amount(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "What is the daily meal allowance when travelling for work?" over a travel policy
    that links to the rates and states none: "This includes evening meals when working
    late" says what the allowance covers, not what it is, so nothing is quoted (the answer
    path then refuses), as for "how much". A sentence stating the rate answers; a question
    about the process around a budget is no amount question. Reverse proof: without the
    allowance form, the sentence without a number is quoted."""
    page = (
        "Meal allowances are paid at the rates in the travel rates document.\n\n"
        "This includes evening meals when working late."
    )
    question = "What is the daily meal allowance when travelling for work?"
    assert quoted(answer(question, snippet("S1", page))) == []
    stated = page + " The daily meal allowance is £25."
    assert any("£25" in u for u in quoted(answer(question, snippet("S1", stated))))
    process = "Budget requests are approved by the finance team each quarter."
    asked = "What is the budget approval process?"
    assert quoted(answer(asked, snippet("S1", process))) == [process]
    monkeypatch.setattr(
        extractive,
        "_ASKS_AMOUNT",
        re.compile(extractive._ASKS_AMOUNT.pattern.split("|\\bwhat(?:'s")[0], re.IGNORECASE),
    )
    assert quoted(answer(question, snippet("S1", page))) != []


def test_when_is_answered_by_the_sentence_saying_when(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "When do summer hours apply?" under the heading "Summer Hours": the sentence saying
    when ("from May 1 through August 31") repeats none of the question's words, the one
    that does ("When a holiday occurs during summer hours, …") says nothing of when. The
    first answers, first; a question asking no "when" is quoted as before. Reverse proof:
    without reading "when", only the sentence repeating the words is quoted."""
    page = (
        "### Summer Hours\n\n"
        "We work 4-day work weeks from May 1 through August 31 every year. When a holiday "
        "occurs during summer hours, you can take the holiday off or your normal summer day off."
    )
    question = "When do summer hours apply?"
    units = quoted(answer(question, snippet("S1", page, "section=Summer Hours")))
    assert units[0] == "We work 4-day work weeks from May 1 through August 31 every year."
    other = quoted(answer("What happens to summer hours on a holiday?", snippet("S1", page)))
    assert not any("May 1" in u for u in other), other
    monkeypatch.setattr(extractive, "_ASKS_WHEN", re.compile(r"(?!)"))
    assert not any(
        "May 1" in u for u in quoted(answer(question, snippet("S1", page, "section=Summer Hours")))
    )


def test_a_sibling_section_named_otherwise_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "How much of my medical insurance premium does the company pay?" over a benefits
    page: under Medical Insurance, "The company pays 75% of the premium …" answers; under
    Dental Insurance, "The company pays 100% of the premium." holds every other word of the
    question but answers for another plan, and is not quoted beside it. Reverse proof:
    judged by its words alone, the dental sentence is quoted too."""
    medical = snippet(
        "S1",
        "Medical Insurance\n\nThe company pays 75% of the premium and the employee pays the "
        "other 25%.",
        "section=Benefits > Medical Insurance",
    )
    dental = snippet(
        "S2",
        "Dental Insurance\n\nThe company pays 100% of the premium.",
        "section=Benefits > Dental Insurance",
    )
    question = "How much of my medical insurance premium does the company pay?"
    units = quoted(answer(question, medical, dental))
    assert units == ["The company pays 75% of the premium and the employee pays the other 25%."]
    monkeypatch.setattr(extractive, "_named_otherwise", lambda *args: False)
    assert "The company pays 100% of the premium." in quoted(answer(question, medical, dental))


def test_a_list_item_is_named_by_the_words_its_label_does_not_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "I'm on the family medical plan. How much is deducted from each paycheck?" over the
    payroll deductions per plan: "family" names "Employee-family medical coverage:" among
    labels that all say "employee … medical coverage", though the question says neither
    "employee" nor "coverage". That item is quoted, not the list. Reverse proof: named by
    whole labels only, the four lines come back."""
    page = (
        "Each pay period, you'll see a payroll deduction for medical insurance:\n\n"
        "* Employee-only medical coverage: $96.05\n"
        "* Employee-partner medical coverage: $197.27\n"
        "* Employee-child(ren) medical coverage: $186.44\n"
        "* Employee-family medical coverage: $287.65"
    )
    question = "I'm on the family medical plan. How much is deducted from each paycheck?"
    units = quoted(answer(question, snippet("S1", page)))
    assert [u for u in units if "$" in u] == ["* Employee-family medical coverage: $287.65"], units
    monkeypatch.setattr(extractive, "_named_by_difference", lambda *args: [])
    assert len([u for u in quoted(answer(question, snippet("S1", page))) if "$" in u]) == 4


def test_what_was_in_a_year_is_not_answered_by_sentences_about_other_years() -> None:
    """ "What was the federal budget deficit in fiscal year 1980?" over a README that
    describes the deficit data and names other years ("From 1984 to 2023"), stating no
    amount: nothing of it says what the deficit was in 1980, so nothing is quoted (the
    answer path then refuses). Reverse proofs: a sentence naming 1980, one stating an
    amount, and a table line with its figure each answer; a question naming no year is
    answered by the README as before."""
    readme = (
        "The code and data in this repository allow users to replicate the evaluations of "
        "projections of budget components: outlays, revenues, deficits, and debt.\n\n"
        "- An Evaluation of Projections of Deficits and Debt From 1984 to 2023"
    )
    question = "What was the federal budget deficit in fiscal year 1980?"
    assert quoted(answer(question, snippet("S1", readme))) == []
    named = readme + "\n\nThe federal budget deficit in fiscal year 1980 is not covered."
    assert any("1980" in u for u in quoted(answer(question, snippet("S1", named))))
    stated = readme + "\n\nThe federal budget deficit was $74 billion that fiscal year."
    assert any("$74 billion" in u for u in quoted(answer(question, snippet("S1", stated))))
    row = "component | fiscal_year | actual_value\ndeficit | 1980 | -73.8"
    assert any("-73.8" in u for u in quoted(answer(question, snippet("S1", row))))
    undated = quoted(
        answer("What was the federal budget deficit data used for?", snippet("S1", readme))
    )
    assert undated, undated


def test_months_asked_are_not_answered_beside_the_whole_year_or_one_month() -> None:
    """ "What was the deficit in the first 10 months of fiscal year 2008?": the review
    states it ($371 billion), then the whole year's estimate ("for fiscal year 2008 will
    be … $400 billion") and one month's ("for the month of July"): those answer other
    questions and are left out once a sentence states the months asked. Reverse proofs:
    without that sentence the others stay, and a question about the whole year keeps the
    estimate."""
    months = (
        "CBO estimates that for the first 10 months of fiscal year 2008, the federal budget "
        "deficit was about $371 billion."
    )
    others = (
        " CBO estimates that the federal budget deficit for fiscal year 2008 will be in the "
        "vicinity of $400 billion. CBO estimates that a deficit of $102 billion was recorded "
        "for the month of July."
    )
    question = "What was the deficit in the first 10 months of fiscal year 2008?"
    units = quoted(answer(question, snippet("S1", months + others)))
    assert any("$371 billion" in u for u in units), units
    assert not any("$400 billion" in u or "$102 billion" in u for u in units), units
    alone = quoted(answer(question, snippet("S1", others.strip())))
    assert any("$400 billion" in u for u in alone), alone
    year = quoted(
        answer("What will the deficit be for fiscal year 2008?", snippet("S1", months + others))
    )
    assert any("$400 billion" in u for u in year), year


def test_how_long_names_the_form_of_the_answer_not_its_subject() -> None:
    """ "How long is the sabbatical and how often can I take it?" over a handbook whose
    sabbatical section says "every three years employees may take a 6-week paid
    sabbatical": the sentence about "longer absences like sabbatical" held "long" as well
    and was quoted instead. "long" and "often" after "how" say what form the answer takes,
    as "much" does. Reverse proof: a question about long absences keeps that sentence."""
    page = (
        "Sabbatical\nIn addition to annual PTO and holidays, every three years employees may "
        "take a 6-week paid sabbatical.\n\nScheduling Time Off\nThe sooner you can inform "
        "your manager, the better, especially longer absences like sabbatical or long "
        "vacations."
    )
    units = quoted(
        answer("How long is the sabbatical and how often can I take it?", snippet("S1", page))
    )
    assert units and "6-week paid sabbatical" in units[0], units
    longer = quoted(answer("What about long absences like a sabbatical?", snippet("S1", page)))
    assert longer and "longer absences" in longer[0], longer


def test_whom_a_question_names_does_not_choose_its_sentence() -> None:
    """ "コニカミノルタの…営業利益は?": the company's name is six terms of a script written
    without spaces, and a sentence about sales that names the company ("コニカとミノルタ")
    held more of them than the one about operating profit. Names of whom the question is
    about weigh as the words of a period. Reverse proof: without the name, the sales
    sentence is quoted."""
    text = (
        "当期の連結売上高は1兆1,599億円と、2003年のコニカとミノルタの経営統合以来最高の売上高となりました。\n"
        "営業利益は、大きな減損損失を計上した前期から大幅増の260億円となった。"
    )
    question = "コニカミノルタの2024年3月期の営業利益はいくらでしたか?"
    request = ChatRequest("answer", question, (), (snippet("S1", text),), names=("コニカミノルタ",))
    units = quoted(ExtractiveProvider().complete(request).text)
    assert len(units) == 1 and "260億円" in units[0], units
    unnamed = quoted(answer(question, snippet("S1", text)))
    assert "売上高" in unnamed[0], unnamed


APPROVALS_1 = (
    "Approving Officials\n"
    "With two exceptions, the authority to approve absence and leave is delegated.\n"
    "- The authority to approve restoration of annual leave forfeited due to exigencies of the "
    "public business is delegated to the following officials and may not be redelegated:\n"
    "- AMS: Administrator, Associate Administrator, and Program Directors."
)
# The next chunk overlaps the first: it starts mid-sentence.
APPROVALS_2 = (
    "not be redelegated:\n"
    "- AMS: Administrator, Associate Administrator, and Program Directors.\n"
    "- APHIS: Administrator, Deputy Administrators, and Directors.\n"
    "- The authority to approve restoration of annual leave forfeited due to sickness is "
    "retained by the Director."
)


def test_a_list_split_across_chunks_gives_the_named_item_and_whole_sentences() -> None:
    """The held-out handbook's approvals list, split over two overlapping chunks: asked
    about APHIS, the answer is the list's whole opening sentence and the APHIS item — not
    the AMS item of the first chunk, and never the second chunk's opening fragment ("not be
    redelegated:") on a line of its own."""
    units = quoted(
        answer(
            "Who approves restoring annual leave forfeited because of exigencies of the public "
            "business at APHIS?",
            snippet("S1", APPROVALS_1, doc="files:approvals.md"),
            snippet("S2", APPROVALS_2, doc="files:approvals.md"),
        )
    )
    assert units[-1] == "- APHIS: Administrator, Deputy Administrators, and Directors.", units
    assert any(u.startswith("- The authority to approve restoration") for u in units), units
    assert not any(u.startswith(("not be", "- AMS")) for u in units), units


def test_a_split_list_without_the_fuller_sentence_shows_the_fragment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reverse proof of the test above: without mapping a chunk's mid-sentence opening to
    the whole sentence of the passage before, the fragment is what is quoted."""
    monkeypatch.setattr(extractive, "_fuller_units", lambda snippets, units: {})
    units = quoted(
        answer(
            "Who approves restoring annual leave forfeited because of exigencies of the public "
            "business at APHIS?",
            snippet("S1", APPROVALS_1, doc="files:approvals.md"),
            snippet("S2", APPROVALS_2, doc="files:approvals.md"),
        )
    )
    assert any(u.startswith("not be") for u in units), units


def test_half_a_sentence_no_passage_completes_is_never_beside_whole_ones() -> None:
    """A chunk that opens mid-sentence ("should outline the specifics of the telework
    arrangement", its subject in the chunk before, which was not retrieved): never quoted
    beside whole sentences; where it is the best unit it is still quoted (verbatim).
    Reverse proof: a passage opening with a name in lower case ("iPhone …") is a sentence."""
    cut = (
        "should outline the specifics of the telework arrangement (e.g., location of "
        "telework, frequency, expectations, etc.). Additionally, the employee will be "
        "required to complete an interactive telework training program prior to entering a "
        "written telework agreement."
    )
    units = quoted(answer("What training must I finish before telework?", snippet("S1", cut)))
    assert units == [
        "Additionally, the employee will be required to complete an interactive telework "
        "training program prior to entering a written telework agreement."
    ], units
    best = quoted(
        answer("What should the telework arrangement specifics outline?", snippet("S1", cut))
    )
    assert best[0].startswith("should outline the specifics"), best
    name = "iPhone net sales rose in 2024. Mac net sales fell."
    assert quoted(answer("How did iPhone and Mac net sales change?", snippet("S1", name)))[
        0
    ].startswith("iPhone net sales rose"), name


def test_a_full_years_amount_never_answers_a_quarter() -> None:
    """ "2024年3月期第2四半期の売上高は?" over a results overview stating the full year's
    sales: the full-year amount is not quoted for the quarter (held-out results deck);
    a sentence stating the second quarter's amount is."""
    overview = (
        "当期における当社グループの連結売上高は、1兆1,599億円(前期比2.6%増)となりました。"
        "デジタルワークプレイス事業は増収となりました。"
    )
    question = "2024年3月期第2四半期の売上高は?"
    units = quoted(answer(question, snippet("S1", overview, doc="files:overview.md")))
    assert not any("1兆1,599億円" in u for u in units), units
    quarter = overview + "第2四半期の連結売上高は5,527億円となりました。"
    units = quoted(answer(question, snippet("S1", quarter, doc="files:overview.md")))
    assert any("5,527億円" in u for u in units) and not any("1兆1,599億円" in u for u in units)
    # Reverse proof: a question naming the year only may be answered with the year's amount.
    units = quoted(
        answer("2024年3月期の売上高は?", snippet("S1", overview, doc="files:overview.md"))
    )
    assert any("1兆1,599億円" in u for u in units), units


RECEIPTS = (
    "Monthly Budget Review, September 5, 2008\n"
    "Total receipts for the first 11 months of fiscal year 2008 were about 1.4 percent lower "
    "than receipts in the same period in fiscal year 2007, CBO estimates. Individual income "
    "taxes showed a decline in receipts of 3 percent. Social insurance receipts grew by about "
    "4 percent, and corporate receipts fell by about 15 percent during the period."
)


def test_words_of_what_is_asked_outweigh_words_of_when() -> None:
    """ "Corporate receipts … in the first 11 months of fiscal year 2008": the sentence about
    corporate receipts comes first, though the one about total receipts restates every word
    of the period. Reverse proof: asked about total receipts, that sentence leads."""
    question = "By how much did corporate receipts fall in the first 11 months of fiscal year 2008?"
    units = quoted(answer(question, snippet("S1", RECEIPTS)))
    assert "corporate receipts fell by about 15 percent" in units[0], units
    total = quoted(
        answer("How much lower were total receipts in fiscal year 2008?", snippet("S1", RECEIPTS))
    )
    assert total[0].startswith("Total receipts for the first 11 months"), total


def test_an_amount_for_the_period_is_quoted_with_the_sentence_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "By how much did corporate tax receipts drop over fiscal year 2008?" (federal probe):
    the answer quoted "corporate receipts fell by about 15 percent during the period", an
    amount for the first 11 months given as the year's. A sentence stating an amount for
    "the period" is quoted after the one naming it. Reverse proof: without that, the
    period is nowhere in the answer."""
    question = "By how much did corporate tax receipts drop over fiscal year 2008?"
    review = (
        "Monthly Budget Review, September 5, 2008\n"
        "CBO anticipates that the government will realize a surplus in September, stemming "
        "from quarterly payments of estimated income taxes.\n\n"
        "Total receipts for the first 11 months of fiscal year 2008 were about 1.4 percent "
        "lower than receipts in the same period in fiscal year 2007, CBO estimates. "
        "Individual income taxes showed a decline in receipts of 3 percent, primarily due to "
        "tax rebates. Social insurance (payroll tax) receipts grew by about 4 percent, and "
        "corporate receipts fell by about 15 percent during the period."
    )

    def text() -> str:
        return " ".join(quoted(answer(question, snippet("S1", review))))

    said = text()
    assert -1 < said.find("first 11 months") < said.find("15 percent"), said
    monkeypatch.setattr(extractive, "_THE_PERIOD", re.compile(r"(?!x)x"))
    said = text()
    assert "15 percent" in said and "first 11 months" not in said, said


MAY_2019 = (
    "Monthly Budget Review for May 2019\n"
    "The federal budget deficit was $738 billion for the first eight months of fiscal year "
    "2019, the CBO estimates, $206 billion more than the deficit recorded during the same "
    "period last year. Revenues were $49 billion higher and outlays were $255 billion higher "
    "than during the first eight months of 2018."
)


@pytest.mark.parametrize(
    ("question", "kept", "cut"),
    [
        (
            "How much did outlays rise in the first eight months of fiscal 2019 compared with "
            "a year earlier?",
            "… outlays were $255 billion higher than during the first eight months of 2018.",
            "$49 billion",
        ),
        (
            "By how much were revenues higher in the first eight months of fiscal year 2019 "
            "than in the same period last year?",
            "Revenues were $49 billion higher … than during the first eight months of 2018.",
            "$255 billion",
        ),
    ],
)
def test_of_two_clauses_stating_amounts_the_one_asked_about_is_quoted(
    monkeypatch: pytest.MonkeyPatch, question: str, kept: str, cut: str
) -> None:
    """Asked how much outlays rose, the answer quoted revenues' $49 billion beside outlays'
    $255 billion: a second figure nobody asked for. The clause whose subject the question
    names is kept, with what both are compared with. Reverse proof: uncut, both amounts."""
    said = quoted(answer(question, snippet("S1", MAY_2019)))
    assert kept in said and not any(cut in q for q in said), said
    monkeypatch.setattr(extractive, "_asked_clause", lambda sentence, question: sentence)
    assert any(cut in q for q in quoted(answer(question, snippet("S1", MAY_2019))))


def test_what_a_figure_did_asks_for_one_amount(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "What deficit did the government run in July 2008?" asks for one amount as "What
    was the deficit …" does: the sentence is cut after the clause stating it, not run on
    to July 2007's and the rebates' amounts. Reverse proof: read as any other question,
    all three amounts are quoted."""
    july = (
        "CBO estimates that a deficit of $102 billion was recorded for the month of July, about "
        "$65 billion more than recorded in July 2007; approximately $14 billion of that "
        "increase was due to rebate payments."
    )
    question = "What deficit did the government run in July 2008 by itself?"
    said = " ".join(quoted(answer(question, snippet("S1", july))))
    assert "$102 billion" in said and "$65 billion" not in said, said
    monkeypatch.setattr(
        extractive, "_ASKS_WHAT_WAS", re.compile(r"^\s*what\s+(?:was|were)\b", re.I)
    )
    assert "$65 billion" in " ".join(quoted(answer(question, snippet("S1", july))))


def test_an_amount_for_another_count_of_months_is_left_out() -> None:
    """ "The first nine months": the amount stated for "the first 10 months" beside it
    answers another question. A sentence naming no count of months stays (it may be the
    paragraph's own period). Reverse proof: asked about the first 10 months, that one is
    quoted and the nine months' is not."""
    text = (
        "During the first nine months of FY 2008, the government incurred a deficit of $268 "
        "billion. For the first 10 months of fiscal year 2008, the deficit was about $371 "
        "billion. The deficit grew because outlays rose by $80 billion."
    )
    nine = " ".join(
        quoted(
            answer(
                "What was the deficit for the first nine months of FY 2008?", snippet("S1", text)
            )
        )
    )
    assert "$268 billion" in nine and "$371 billion" not in nine, nine
    ten = " ".join(
        quoted(
            answer("What was the deficit for the first 10 months of FY 2008?", snippet("S1", text))
        )
    )
    assert "$371 billion" in ten and "$268 billion" not in ten, ten


def test_a_table_row_is_of_the_quarter_its_header_names() -> None:
    """ "2023年第三季度末总资产": the row of a table headed by the third-quarter report states
    the amount of that quarter, so it is quoted. Reverse proof: asked about the second
    quarter, it is not."""
    table = (
        "比亚迪股份有限公司 2023年第三季度报告 | 本报告期末 | 上年度末 | 本报告期末比上年度末增减\n"
        "总资产（元） | 623,283,496,000.00 | 493,860,646,000.00 | 26.21%\n"
        "归属于上市公司股东的所有者权益（元） | 129,855,730,000.00 | 111,029,299,000.00 | 16.96%\n"
    )
    q3 = answer("比亚迪2023年第三季度末总资产是多少?", snippet("S1", table))
    assert "623,283,496,000.00" in q3, q3
    assert answer("比亚迪2023年第二季度末总资产是多少?", snippet("S1", table)) == ""


def test_a_quantity_asked_for_is_found_in_the_sentence_that_continues_the_answer() -> None:
    """ "How much administrative leave can I take to vote?": the sentence naming voting
    states no quantity; the one after it ("up to 4 hours for each election event") holds
    none of the question's words but continues it, so it follows it (TTS handbook case).
    Reverse proof: a question asking no quantity does not get it."""
    text = (
        "Voting and poll volunteering\n"
        "You can receive Administrative Leave in order to vote, register to vote, and/or "
        "participate in early voting. You can receive up to 4 hours for each election event. "
        "This includes primaries and caucuses."
    )
    how_much = quoted(
        answer("How much administrative leave can I take to vote?", snippet("S1", text))
    )
    assert how_much[:2] == [
        "You can receive Administrative Leave in order to vote, register to vote, and/or "
        "participate in early voting.",
        "You can receive up to 4 hours for each election event.",
    ], how_much
    why = quoted(answer("Is administrative leave given to vote?", snippet("S1", text)))
    assert not any("4 hours" in u for u in why), why


LEAVE_TYPES = (
    "Annual leave\n"
    "You can carry over a maximum of 240 annual leave hours, from one leave year to the next."
    "\n\nMilitary leave\n"
    "You can receive 15 Military Leave days each year. You can carry over a maximum of 15 days "
    "into the next fiscal year."
)


def test_a_neighbouring_section_sharing_some_words_is_left_out() -> None:
    """ "How many annual leave hours can I carry over to the next leave year?": the military
    leave section's "carry over a maximum of 15 days into the next fiscal year" shares half
    the question's words but answers another question (TTS handbook case). Reverse proof:
    asked about military leave, that section answers."""
    annual = quoted(
        answer(
            "How many annual leave hours can I carry over to the next leave year?",
            snippet("S1", LEAVE_TYPES, doc="files:leave.md"),
        )
    )
    assert annual == [
        "You can carry over a maximum of 240 annual leave hours, from one leave year to the next."
    ], annual
    military = quoted(
        answer(
            "How many military leave days can I carry over?",
            snippet("S1", LEAVE_TYPES, doc="files:leave.md"),
        )
    )
    assert any("15 days" in u for u in military), military


def test_a_list_is_quoted_whole_when_a_sentence_before_it_is_quoted_too() -> None:
    """The first sentence of a snippet and its first list are two choices: quoting the
    sentence must not count as having quoted the list (held-out probe case: only the list
    item naming a recommendation was quoted, through the next chunk's overlap). Reverse
    proof: the items that share no word with the question are there too."""
    text = (
        "As a first-level supervisor, you review telework applications and make "
        "recommendations to the second-level supervisor.\n"
        "Points you need to consider include:\n"
        "- ensure the employee meets performance and conduct standards,\n"
        "- ensure duties can be performed away from the official duty station,\n"
        "- make a recommendation to the second-level supervisor,\n"
    )
    units = quoted(
        answer(
            "What should a first-level supervisor check before recommending a telework "
            "application?",
            snippet("S1", text),
        )
    )
    assert "- ensure the employee meets performance and conduct standards," in units, units
    assert "- ensure duties can be performed away from the official duty station," in units


def test_a_unit_cut_by_the_end_of_a_chunk_is_quoted_whole_from_the_next_one() -> None:
    """A chunk that ends inside a list item ("… send an email to Alexandra") beside the
    next chunk of the same page holding the whole item: the whole item is quoted (TTS
    handbook trial). Reverse proof: alone, the first chunk can only give what it holds."""
    first = snippet(
        "S1",
        "Approver information\n- Select your supervisor.\n"
        "- Once enrolled, the supervisor needs to send an email to Alexandra",
        doc="files:transit.md",
    )
    second = snippet(
        "S2",
        "- Once enrolled, the supervisor needs to send an email to Alexandra Sabbers at "
        "transit@example.gov requesting elevation to supervisor status.\n- Click Continue.",
        doc="files:transit.md",
    )
    question = "Who does the supervisor email once enrolled?"
    both = quoted(answer(question, first, second))
    assert any(u.endswith("requesting elevation to supervisor status.") for u in both), both
    assert not any(u.endswith("email to Alexandra") for u in both), both
    alone = quoted(answer(question, first))
    assert any(u.endswith("email to Alexandra") for u in alone), alone


def test_an_abbreviation_a_page_defines_holds_the_words_it_stands_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "How long do I have to use paid parental leave?" over a page titled "Paid parental
    leave (PPL)" whose answer says "use the PPL within a year": that sentence holds the
    question's words through the abbreviation the page defines, and is quoted first.
    Reverse proof: an abbreviation the page does not define ("Payroll Processing Log")
    expands to nothing, and a sentence naming the words outright comes first."""
    text = (
        "TTS has Paid parental leave (PPL) for a new child. You will submit a leave request, "
        "using the same steps that you use for sick leave. You must use the PPL within a "
        "year of the child's birth or placement."
    )
    question = "How long do I have to use paid parental leave?"
    first = quoted(answer(question, snippet("S1", text)))[0]
    assert first.startswith("You must use the PPL"), first
    undefined = text.replace("Paid parental leave (PPL)", "a Payroll Processing Log (PPL)")
    # "within a year" states how long, which a question asking how long puts first too
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    first = quoted(answer(question, snippet("S1", undefined)))[0]
    assert not first.startswith("You must use the PPL"), first


def test_a_nested_step_is_quoted_at_its_depth_through_the_answer_checks() -> None:
    """ "   1." under "2." (a nested Markdown list keeps its depth in the document's text)
    is shown at that depth in the answer, after the checks that split and re-join it,
    never as a second first step (TTS handbook trial). Reverse proof: top-level steps are
    not indented."""
    from clearance.answer.narrative import check_answer

    text = (
        "Before taking leave, be sure to:\n1. Submit a leave request.\n"
        "2. Mark your out of office time on your calendar.\n"
        "   1. Google Calendar has an OOO setting.\n3. Decline or reschedule meetings."
    )
    source = snippet("S1", text)
    raw = answer("What do I need to do before going on leave?", source)
    lines = check_answer(raw, [source]).render().splitlines()
    assert "   1. Google Calendar has an OOO setting. [S1]" in lines, lines
    assert "2. Mark your out of office time on your calendar. [S1]" in lines, lines


def test_how_much_in_japanese_is_answered_by_the_sentence_stating_the_amount() -> None:
    """ "費用はいくらまで出ますか?" over a benefit's page: the sentence naming the check states
    no amount, the one after it ("年間最大 ¥15,000 を払い戻します") holds none of the question's
    words but says how much, and the steps to claim (numbered, no amount of their own: a
    step's "1." is its place) do not answer how much. Reverse proof: asked how to claim,
    the steps are the answer."""
    text = (
        "概要\n協会けんぽを通じて、年に一度の健康診断を受けられます。"
        "GitLab は年間最大 ¥15,000 を払い戻します。\n\n"
        "申請方法\n1. 予約: 施設に予約する\n2. 受診: 健康診断を受ける\n3. 提出: 領収書を提出する"
    )
    cost = quoted(answer("健康診断の費用はいくらまで出ますか?", snippet("S1", text)))
    assert any("¥15,000" in u for u in cost), cost
    assert not [u for u in cost if u.startswith(("1.", "2.", "3."))], cost
    steps = quoted(answer("健康診断の申請方法は？", snippet("S1", text)))
    assert "1. 予約: 施設に予約する" in steps, steps


def test_how_much_looks_again_at_what_states_a_number() -> None:
    """ "出張保険の緊急医療はいくらまで補償されますか?": the prose around the coverage table holds
    more of the question's words than its row "緊急医療 | 最大$250,000", and states no
    amount; the row is what answers, so it is quoted rather than nothing. Reverse proof: a
    page stating no amount anywhere still gets nothing (the answer path then refuses)."""
    prose = snippet(
        "S1",
        "出張中に医療支援が必要な場合\n出張保険の緊急医療の補償については、出張中に医療機関を"
        "受診する前に International SOS に連絡してください。",
        doc="files:travel.md",
    )
    row = snippet(
        "S2",
        "カバレッジの種類: 緊急医療 | 給付: 1件あたり最大$250,000",
        "section=出張保険 > 主なカバレッジ,table=1,row=緊急医療",
        "files:travel.md",
    )
    question = "海外出張中に病院にかかった場合、出張保険の緊急医療はいくらまで補償されますか?"
    assert quoted(answer(question, prose, row)) == [
        "カバレッジの種類: 緊急医療 | 給付: 1件あたり最大$250,000"
    ]
    assert quoted(answer(question, prose)) == []


def test_a_list_another_section_names_does_not_hide_this_one() -> None:
    """ "Do I need my manager's sign-off before taking a few days of vacation?": the page's
    ground rules are a list under "PTO ground rules"; its "Types of time off" list, in
    another chunk, has an item labelled "Vacation:". That label names an item of *that*
    list, not of this one, which still answers (Sourcegraph handbook trial: the answer was
    empty). Reverse proof: the rest of the same list, in another chunk of the same
    section, naming the item still leaves the part naming none out."""
    doc = "files:time-off.md"
    rules = snippet(
        "S1",
        "PTO ground rules\n"
        "- Tell your manager about your time off at least 5 business days before, with no "
        "formal sign-off needed for a few days.\n"
        "- Record your time off in the PTO app before you take it.",
        "section=Time off > PTO ground rules",
        doc,
    )
    types = snippet(
        "S2",
        "Types of time off\n- Vacation: plan it with your team.\n- Sick days: rest.",
        "section=Time off > Types of time off",
        doc,
    )
    question = "Do I need my manager's sign-off before taking a few days of vacation?"
    got = quoted(answer(question, rules, types))
    assert any("5 business days" in u for u in got), got
    same_list = snippet(
        "S2",
        "- Vacation days: plan them with your team.\n- Sick days: rest.",
        "section=Time off > PTO ground rules",
        doc,
    )
    got = quoted(answer(question, rules, same_list))
    assert not any("5 business days" in u for u in got), got


def test_which_ones_is_answered_by_the_list_after_the_sentence() -> None:
    """ "Which countries can't I work from, even temporarily while travelling?": the sentence
    that holds the question's words ends in a full stop, and the countries are the list
    right after it, holding none of them; the list is the answer (Sourcegraph handbook
    trial: only the sentence was quoted). Reverse proof: a question asking no "which" is
    answered by the sentence alone."""
    text = (
        "Countries where we cannot support employment\n"
        "We cannot employ teammates in any of these countries due to embargoes. "
        "This includes work while traveling for personal reasons.\n"
        "- Cuba\n- Iran\n- North Korea"
    )
    which = quoted(
        answer("Which countries can't I work from while travelling?", snippet("S1", text))
    )
    assert which[-3:] == ["- Cuba", "- Iran", "- North Korea"], which
    whether = quoted(answer("Does this include work while travelling?", snippet("S1", text)))
    assert "- Cuba" not in whether, whether


DESK_POINTER = (
    "Directions for how to determine how much spend you have left in each travel category, "
    "professional development, or desk setup can be found here."
)
DESK_BUDGET = (
    "Full-time teammates\n"
    "We expect new teammates to spend up to $2,000 for desk setup, which includes all the "
    "items in the desk items section.\n\n"
    "If you don't spend all of your budget when you first join, it's ok to spend it later."
)


def desk_snippets() -> tuple[Snippet, Snippet]:
    return (
        snippet("S1", DESK_POINTER, "section=Spending company money", "files:money.md"),
        snippet(
            "S2",
            DESK_BUDGET,
            "section=Spending company money > Desk set-up > Full-time teammates",
            "files:money.md",
        ),
    )


def test_how_much_opens_with_the_sentence_stating_the_amount() -> None:
    """ "How much money can I spend setting up my home desk when I join?" (Sourcegraph
    handbook trial): the page's opening section points to where "how much spend you have
    left" is looked up, sharing the question's own "how much", which names the form of the
    answer, not its topic; the answer opens with "up to $2,000", not with the pointer. The
    reverse proof is the next test."""
    question = "How much money can I spend setting up my home desk when I join?"
    units = quoted(answer(question, *desk_snippets()))
    assert units[0].startswith("We expect new teammates to spend up to $2,000"), units


def test_how_much_opens_with_the_amount_the_former_reading_misses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reverse proof of the test above: with "much" counted as a word of the topic and
    no amount put first, the pointer opens the answer."""
    monkeypatch.setattr(
        extractive, "_HOW_FORM", re.compile(r"\bhow\s+(long|far|often)\b", re.IGNORECASE)
    )
    monkeypatch.setattr(extractive, "_ASKS_AMOUNT", re.compile(r"(?!x)x"))
    question = "How much money can I spend setting up my home desk when I join?"
    units = quoted(answer(question, *desk_snippets()))
    assert units[0].startswith("Directions"), units


WEEKENDS = (
    "Is there an expectation to work over the weekends?\n"
    "There is no expectation that people will be responsive over the weekend, except on-call "
    "duty announced early.\n\n"
    "Why is there so much activity over the weekend on Slack?\n"
    "Due to our global team one person's weekend can be someone else's weekday."
)


def test_a_question_the_page_asks_is_never_quoted_as_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Am I expected to reply to Slack messages on weekends?" over a page of questions and
    answers (Sourcegraph handbook trial): the page's own question "Why is there so much
    activity over the weekend on Slack?" holds the most of the asked words and opened the
    answer, echoing a question instead of answering. A question the page asks is never
    quoted; the unit after it, its answer, is scored for what the two share with the
    question asked. Reverse proof: scored as a unit of its own, the page's question is
    quoted."""
    question = "Am I expected to reply to Slack messages on weekends?"
    page = snippet("S1", WEEKENDS, "section=Remote work > FAQ")
    units = quoted(answer(question, page))
    assert not [u for u in units if u.endswith("?")], units
    assert any(u.startswith("There is no expectation") for u in units), units
    monkeypatch.setattr(extractive, "_asks", lambda unit: False)
    assert any(u.endswith("?") for u in quoted(answer(question, page)))


ACTUALS_FILE = (
    "Fannie Mae and Freddie Mac Outlays\n"
    "This affects the Total Outlays, the Mandatory category and Other Mandatory subcategory "
    "of outlays, as well as the deficit projections."
)
ACTUALS_DATES = (
    "2. actuals.csv\n"
    "This file contains actual outlay, revenue, deficit, and debt data.\n"
    "   - For Total Outlays, data begin in fiscal year 1984. For every other category, data "
    "start in 1989.\n"
    "   - For revenues, data begin in fiscal year 1982."
)


def test_how_far_back_opens_with_the_unit_stating_when() -> None:
    """ "How far back does the actuals file go for outlay categories other than total
    outlays?" (GitLab set, probe split): a note on the Fannie Mae outlays holds as many of
    the question's words as the item saying when the data start, and came first; how far
    back is a quantity asked, answered by the unit stating it (in the file's list, which
    opens with the file's name and what it holds). Reverse proof: asked which categories
    the note affects, no date opens the answer."""
    note = snippet("S1", ACTUALS_FILE, "section=Technical Data Notes", "files:readme.md")
    dates = snippet("S2", ACTUALS_DATES, "section=Input Data Descriptions", "files:readme.md")
    question = (
        "How far back does the actuals file go for outlay categories other than total outlays?"
    )
    text = answer(question, note, dates)
    # the file's list, its name and what it holds opening it, comes before the note
    assert text.startswith("2. actuals.csv\n   This file contains"), text
    assert text.index("start in 1989") < text.index("This affects"), text
    which = quoted(
        answer("Which outlay categories other than total outlays does it affect?", note, dates)
    )
    assert "1989" not in which[0], which


EMBARGOED = (
    "Embargoed countries\n"
    "We cannot support or employ candidates or teammates in any of these countries due to "
    "U.S. embargoes and sanctions. This includes work while traveling for personal reasons.\n"
    "- Cuba\n"
    "- Iran\n"
    "- North Korea"
)


def test_an_answer_never_opens_with_a_sentence_pointing_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Which countries can't I work from, even temporarily while travelling?" (Sourcegraph
    handbook trial): the sentence holding most of the question's words is "This includes
    work while traveling for personal reasons.", whose "This" is the rule the sentence
    before it states; the answer opened with it and never said what "this" was. The sentence
    it points back to is quoted before it. Reverse proof: without that step the answer
    opens with "This includes"."""
    question = "Which countries can't I work from, even temporarily while travelling?"
    page = snippet("S1", EMBARGOED, "section=Nomad life > Embargoed countries", "files:nomad.md")
    units = quoted(answer(question, page))
    assert units[0].startswith("We cannot support or employ candidates"), units
    assert units[1].startswith("This includes work while traveling"), units
    assert "Cuba" in " ".join(units), units
    monkeypatch.setattr(extractive, "_with_antecedent", lambda *args: None)
    assert quoted(answer(question, page))[0].startswith("This includes"), answer(question, page)


def test_what_a_chunk_opens_with_is_no_antecedent() -> None:
    """A chunk may open with the end of a sentence its cut left ("ンバウンド需要の増加…"):
    that is not quoted before the sentence pointing back to it ("このような経営環境の下で…")."""
    text = (
        "ンバウンド需要の増加などもあり景気は緩やかに回復しております。"
        "このような経営環境の下で、当期の連結売上高は1兆1,599億円となりました。"
    )
    units = quoted(answer("当期の連結売上高は?", snippet("S1", text)))
    assert units and units[0].startswith("このような経営環境"), units


REVIEWS = (
    "Performance reviews\n"
    "You'll meet with your manager for formal performance reviews. When you're new, you'll "
    "meet at the 3-month, 6-month, and 1-year marks."
)
SUPPORT_MANAGER = (
    "Category: Mastery | Customer Support Manager (M1): Oversees performance management for "
    "a team of 2-4 reps. Runs 3/6/12 performance reviews."
)


def test_how_often_is_not_answered_by_any_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "How often will my manager review my performance?" (37signals handbook trial): a
    support manager's job table row states "3/6/12 performance reviews"; put first as the
    unit stating a number, it opened the answer about someone else's job. How often and how
    long are answered in the best unit's order; only how much, how many and how far back
    open with a number. Reverse proof: with every quantity question opening with a number,
    the row opens the answer."""
    question = "How often will my manager review my performance?"
    prose = snippet("S1", REVIEWS, "section=Your first year > Performance reviews")
    row = snippet(
        "S2", SUPPORT_MANAGER, "section=Support > Roles,table=1,row=Mastery", "files:r.md"
    )
    assert quoted(answer(question, prose, row))[0].startswith("You'll meet with your manager")
    monkeypatch.setattr(extractive, "_ASKS_SINCE", re.compile(r"how\s+often", re.IGNORECASE))
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    assert quoted(answer(question, prose, row))[0].startswith("Category: Mastery")


CHAT = (
    "[2026-10-05 08:12 ET] Tom Reyes (Globex, external): Morning. 37 of the Sentinel gateways "
    'in Building C show "offline" since Saturday night.\n'
    "[2026-10-05 08:20 ET] Frank Müller (ACME Support): Thanks Tom. Which firmware do they run?\n"
    "[2026-10-05 08:41 ET] Tom Reyes (Globex, external): 2.3.1 on all of them."
)


def test_who_posted_a_chat_message_is_not_what_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked why Globex's gateways went offline, the answer quoted "[…] Tom Reyes (Globex,
    external): Morning." and "… 2.3.1 on all of them.": the speaker's company held the
    question's "Globex". The label of who posted a message counts nothing; the message
    still does. Reverse proof: counting the label, "Morning." is quoted again."""
    question = "Why did the gateways at Globex go offline?"
    text = answer(question, snippet("S1", CHAT))
    assert text.startswith("37 of the Sentinel gateways"), text
    assert "Morning." not in text and "2.3.1 on all of them" not in text
    monkeypatch.setattr(extractive, "_without_speaker", lambda text: text)
    assert "Morning." in answer(question, snippet("S1", CHAT))


def test_an_abbreviations_period_ends_no_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "(ie. James, Tim, or Charles)" is inside the sentence that answers whom to ask: it is
    quoted whole, never from "James, Tim, or Charles) to get …". Reverse proof: with every
    period ending a sentence, the sentence is cut at "ie."."""
    page = (
        "We ask you to please just check in with the relevant Exec team member for your team "
        "(ie. James, Tim, or Charles) to get their confirmation before going ahead with any "
        "side gigs."
    )
    units = quoted(answer("Who do I need to ask before starting a side gig?", snippet("S1", page)))
    assert units == [page], units
    monkeypatch.setattr(extractive, "ends_with_abbreviation", lambda before: False)
    cut = quoted(answer("Who do I need to ask before starting a side gig?", snippet("S1", page)))
    assert cut != [page], cut


def test_a_word_the_page_writes_as_two_is_the_questions_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Should I buy AppleCare with my laptop?" over a page that writes "Apple Care": the
    sentence saying not to buy it answers, first, though it shares only "buy" with the
    question word for word. Reverse proof: with no words read as one, the cashback sentence
    beside it (which says "buying" and "Apple") comes first."""
    page = (
        "When buying something at Apple we can get 3% cashback on purchases through Brex. "
        "If you buy from Apple, you may be asked if you wanted to purchase Apple Care - please "
        "don't buy this as it's not great value for money."
    )
    question = "Should I buy AppleCare with my laptop?"
    units = quoted(answer(question, snippet("S1", page)))
    assert units[0].startswith("If you buy from Apple"), units
    assert ("appl", "care", "applecar") in extractive.word_pairs("purchase Apple Care - please")
    monkeypatch.setattr(extractive, "word_pairs", lambda text: [])
    assert not quoted(answer(question, snippet("S1", page)))[0].startswith("If you buy"), units


INVITES = (
    "Postmortem Meeting\n"
    "These meetings should generally last 15-30 minutes.\n\n"
    "You should invite the following people to the postmortem meeting,\n\n"
    "- The Incident Commander.\n"
    "- Service owners involved in the incident.\n"
    "- Engineering manager for impacted systems.\n"
)


def test_a_sentence_ending_in_a_comma_before_a_list_brings_the_list() -> None:
    """ "Who has to be invited to the postmortem meeting?" (PagerDuty incident response
    trial): the page introduces whom to invite with a sentence ending in a comma, and the
    answer quoted that sentence alone, naming no one. Like one ending in a colon, it
    introduces the list after it, which is quoted with it. Reverse proof: read as a sentence
    of its own, it is quoted without the people."""
    question = "Who has to be invited to the postmortem meeting?"
    units = quoted(answer(question, snippet("S1", INVITES, "section=Postmortem Meeting")))
    lead = units.index("You should invite the following people to the postmortem meeting,")
    assert units[lead + 1 : lead + 4] == [
        "- The Incident Commander.",
        "- Service owners involved in the incident.",
        "- Engineering manager for impacted systems.",
    ], units


def test_reverse_proof_a_comma_lead_read_alone_names_no_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(extractive, "_LEAD_ENDINGS", (":", "："))
    with pytest.raises(AssertionError):
        test_a_sentence_ending_in_a_comma_before_a_list_brings_the_list()


POSTMORTEM_STEPS = (
    "Postmortem\n"
    "1. Post a link to the postmortem into Slack to be reviewed for style and content by "
    "internal parties, you should try to do this about 24 hours before the meeting is "
    "scheduled.\n"
    "1. Attend the postmortem meeting.\n"
)
POSTMORTEM_MEETING = (
    "Postmortem Meeting\n"
    "These meetings should generally last 15-30 minutes and are intended to be a wrap up of "
    "the postmortem process. We should discuss what happened and any follow-up actions that "
    "we need to take."
)


def postmortem_snippets() -> tuple[Snippet, Snippet]:
    return (
        snippet("S1", POSTMORTEM_MEETING, "section=Postmortem Meeting", "files:pm.md"),
        snippet("S2", POSTMORTEM_STEPS, "section=Postmortem", "files:pm.md"),
    )


def test_how_long_opens_with_the_sentence_stating_a_duration() -> None:
    """ "How long should the post-incident review meeting take?" (PagerDuty incident
    response trial): a step sharing more of the question's words ("post", "review",
    "meeting", "should") and saying when to post ("about 24 hours before the meeting")
    opened the answer; the sentence of the passage retrieval ranks first saying how long
    ("last 15-30 minutes") now does. Reverse proof: the next test."""
    units = quoted(
        answer("How long should the post-incident review meeting take?", *postmortem_snippets())
    )
    assert units[0].startswith("These meetings should generally last 15-30 minutes"), units


def test_reverse_proof_how_long_read_as_any_question(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    monkeypatch.setattr(extractive, "_ASKS_DURATION_IN_WORDS", re.compile(r"(?!x)x"))
    with pytest.raises(AssertionError):
        test_how_long_opens_with_the_sentence_stating_a_duration()


@pytest.mark.parametrize(
    ("sentence", "states"),
    [
        ("These meetings should generally last 15-30 minutes.", True),
        ("Provide updates roughly every 30 mins.", True),
        ("Schedule it within 3 calendar days for a SEV-1.", True),
        ("Reports are sent weekly.", True),
        ("30分以内に投稿します。", True),
        ("- Engineering and Product: 2.5yrs", True),
        ("Reviews happen every quarter.", True),
        ("It takes a couple of weeks.", True),
        ("Coverage lasts as long as you are employed.", True),
        ("Access is removed immediately.", True),
        ("A second engineer joins the call.", False),
        ("Filed on 2024年4月15日.", False),
        ("Every employee must sign it.", False),
        ("The 2019 year-end report.", False),
        ("Every three years employees may take a 6-week paid sabbatical.", True),
        ("Post it about 24 hours before the meeting is scheduled.", False),
        ("Give your team a heads-up three months in advance.", False),
        ("Attend the postmortem meeting.", False),
    ],
)
def test_a_duration_is_how_long_not_when(sentence: str, states: bool) -> None:
    assert extractive._states_duration(sentence) is states


SHADOWING = (
    "Incident Commander\n"
    "Trainees are typically on the Incident Commander Shadow schedule. Anyone on the "
    "Incident Commander on-call schedule can act as the Incident Commander."
)


def test_how_long_with_no_duration_on_the_page_is_no_answer() -> None:
    """ "How long do I have to shadow an existing IC before I join the rotation?" (PagerDuty
    incident response trial): the page says who shadows, never for how long; the linked
    training guide does. Sentences stating no duration do not answer how long, as those
    stating no amount do not answer how much, so nothing is quoted and the question is
    refused. Reverse proof: read as any question, they are quoted as the answer."""
    question = (
        "I'd like to become an incident commander. How long do I have to shadow an existing "
        "IC before I join the rotation?"
    )
    text = answer(question, snippet("S1", SHADOWING, "section=Different Roles > IC"))
    assert text == "", text


def test_reverse_proof_how_long_answered_by_who_shadows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    monkeypatch.setattr(extractive, "_ASKS_DURATION_IN_WORDS", re.compile(r"(?!x)x"))
    with pytest.raises(AssertionError):
        test_how_long_with_no_duration_on_the_page_is_no_answer()


def test_how_long_over_a_japanese_sentence_is_not_refused_for_its_spelling() -> None:
    """A question asking how long in English over a Japanese page, whose sentence spells the
    length as Japanese does ("最長2年"): the duration pattern reads English lengths, so a
    sentence in another script is no proof that nothing states one, and it is quoted.
    Reverse proof: required to state a length in English words, it is refused."""
    text = "休職制度\n休職期間は勤続年数に応じて最長2年とします。"
    quoted_text = answer(
        "How long can a leave of absence (休職) last?", snippet("S1", text, "section=休職制度")
    )
    assert "最長2年" in quoted_text, quoted_text


def test_reverse_proof_a_japanese_length_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extractive, "_spelled_otherwise", lambda sentence: False)
    with pytest.raises(AssertionError):
        test_how_long_over_a_japanese_sentence_is_not_refused_for_its_spelling()


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How long is the sabbatical?", True),
        ("How often are reviews held?", True),
        ("有給休暇は何日間取れますか？", True),
        ("带薪育儿假有多久？", True),
        ("申請は何日までに出せばいいですか？", False),  # by what date: when, not how long
        ("何年に導入されましたか？", False),  # in which year
        ("How much is the allowance?", False),
    ],
)
def test_asking_how_long_is_told_from_asking_when(question: str, asks: bool) -> None:
    assert bool(extractive._ASKS_DURATION.search(question)) is asks


def test_how_long_puts_the_duration_first_among_sentences_already_quoted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ordering alone, apart from the second look for a length: both sentences are
    quoted, and the one stating the length opens the answer although the other shares more
    of the question's words. Reverse proof: with how long read as any question, the other
    opens it."""
    text = (
        "Postmortem meeting\n"
        "We discuss the postmortem at the review meeting with the whole team. "
        "The review meeting lasts 30 minutes."
    )
    question = "How long does the postmortem review meeting with the team last?"

    def first() -> str:
        return quoted(answer(question, snippet("S1", text, "section=Postmortem meeting")))[0]

    assert first() == "The review meeting lasts 30 minutes."
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    assert first().startswith("We discuss the postmortem")


INPUT_FILES = (
    "Input Data Descriptions\n"
    "The input data consists of the four files listed below.\n"
    "1. actual_gdp.csv\n"
    "This file contains GDP data beginning in 1982.\n"
    "2. actuals.csv\n"
    "This file contains actual outlay, revenue, deficit, and debt data.\n"
    "   - For revenues, data begin in fiscal year 1982.\n"
    "- Activate the virtual environment with the command:\n"
    "conda activate CBO-eval-projections\n"
    "(Run the code from within that environment.)"
)


def test_a_list_item_naming_a_file_is_quoted_with_the_line_describing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A README names each input file in a list item and says what it holds on the next
    line, after a hard break that the Markdown loader writes at no indent (GitLab set,
    second probe file). The description read as prose after the item: asked which file
    holds the revenue data, the answer quoted "This file contains actual outlay, revenue
    …" without the file's name, the one thing asked. The line a list item naming a file
    (or ending in a colon) goes on to is the item's own, and an answer quotes them as one
    item, which the answer check keeps whole. Reverse proof: with that line read as prose
    again, the same answer names no file."""
    from clearance.answer.narrative import check_answer

    readme = snippet("S1", INPUT_FILES, "section=Input Data Descriptions", "files:readme.md")

    def checked(question: str) -> str:
        return check_answer(answer(question, readme), [readme]).render()

    question = "Which input file has the actual revenue data?"
    assert "actuals.csv" in checked(question)
    assert "This file contains actual outlay" in checked(question)
    command = checked("What command activates the virtual environment?")
    assert "conda activate CBO-eval-projections" in command, command
    # a paragraph after the list, and an item that is no name, stay as they are
    units = extractive._units(
        snippet(
            "S2",
            "Two files:\n- actuals.csv\n- baseline.csv\n\nClaims are filed by the 5th.\n"
            "- e.g.\nAnother line.",
            "section=Files",
            "files:readme.md",
        )
    )
    assert [u.text for u in units][2:] == [
        "- baseline.csv",
        "Claims are filed by the 5th.",
        "- e.g.",
        "Another line.",
    ]
    monkeypatch.setattr(extractive, "_carries_on", lambda item: False)
    assert "actuals.csv" not in checked(question)


STOLEN = (
    "For lost work laptops, phones, etc., do the following as quickly as possible:\n"
    "1. Follow the\n"
    "GSA-wide steps.\n"
    "1. Inform your team.\n"
    "   - Your access to various systems may need to be temporarily removed.\n"
    "1. Inform equipment."
)


def test_a_list_item_cut_mid_sentence_is_quoted_with_its_next_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hard-wrapped step ("1. Follow the" / "[GSA-wide steps](…)." in the TTS handbook's
    equipment page) ended the answer at "1. Follow the". An item ending in a word no
    sentence ends with (an article, a preposition, a comma) goes on to the next line.
    Reverse proof: read as the item's end, the step is cut."""
    from clearance.answer.narrative import check_answer

    page = snippet("S1", STOLEN, "section=Lost or stolen equipment", "files:equipment.md")
    question = "My work laptop was stolen. What are the steps?"

    def checked() -> str:
        return check_answer(answer(question, page), [page]).render()

    assert "Follow the GSA-wide steps." in " ".join(checked().split())
    # an item cut twice goes on twice ("… over 12 hours in" / "duration is … a Voucher
    # From" / "Authorization.")
    voucher = snippet(
        "S2",
        "- Any travel over 12 hours in\nduration is considered a Voucher From\nAuthorization.\n"
        "- For local travel choose the Local voucher.",
        "section=Vouchers",
        "files:travel.md",
    )
    assert [" ".join(u.text.split()) for u in extractive._units(voucher)] == [
        "- Any travel over 12 hours in duration is considered a Voucher From Authorization.",
        "- For local travel choose the Local voucher.",
    ]
    # an item ending a sentence, or naming something, does not go on, nor a short step
    # ending in a particle ("1. Sign in") or a name ending in a capital letter
    assert not extractive._carries_on("1. Sign in")
    assert not extractive._carries_on("- Medicare Part A")
    assert not extractive._carries_on("1. Inform your team.")
    assert not extractive._carries_on("- Paid leave")
    monkeypatch.setattr(extractive, "_MID_SENTENCE", re.compile(r"(?!x)x"))
    assert "Follow the [S1]" in checked()


TANSHIN = (
    "1.2024年3月期第2四半期の連結業績(2023年4月1日~2023年9月30日) | 売上高(百万円) | 売上高(%) | "
    "事業貢献利益(百万円) | 事業貢献利益(%) | 営業利益(百万円) | 営業利益(%) | 税引前利益(百万円) | "
    "四半期利益(百万円)\n"
    "2024年3月期第2四半期 | 552,763 | 4.1 | 2,288 | 211.3 | 785 | - | △3,746 | △4,496\n"
    "2023年3月期第2四半期 | 530,743 | 19.2 | 735 | - | △5,138 | - | △3,111 | △7,035"
)


def test_a_japanese_tables_losses_are_figures_and_the_rows_words_pick_no_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "2023年3月期第2四半期の営業利益は赤字でしたか?" (federal probe) over a 決算短信 table: its
    operating loss is written "△5,138", which was not read as a figure, so the column was
    dropped and the neighbours' 735 and △3,111 were quoted instead (a wrong figure). A loss
    marked △ or ▲ and a "-" are figure cells; the words naming the row (四半期) choose no
    column, and a value ("19.2") names none. Reverse proof: with the old figure pattern,
    the operating loss is not quoted."""
    table = snippet("S1", TANSHIN, "rows=1-3", "files:konica-minolta-2024-q2-tanshin.csv")
    question = "前の年の同じ時期、つまり2023年3月期第2四半期の営業利益は赤字でしたか?金額も教えてください。"
    said = answer(question, table)
    assert "△5,138" in said and "△3,111" not in said and "19.2" not in said, said
    monkeypatch.setattr(
        extractive, "_FIGURE_CELL", re.compile(r"[-+(]?[$€£¥]?\d[\d,]*(?:\.\d+)?\)?\s?%?")
    )
    assert "△5,138" not in answer(question, table)


UNPAID = (
    "Unpaid leave\n"
    "If you have exhausted all other paid leave options, you can request Leave Without Pay "
    "(LWOP). You can request unpaid leave of less than four weeks at any time. Written "
    "requests for unpaid leave should say how much leave you need and for how long.\n\n"
    "To take a leave of absence without pay, you'll need justification and supervisory "
    "oversight. For longer periods, you'll also need 2nd level supervisory approval:\n\n"
    "- To request 80 hours or less of LWOP, you must get written approval from your immediate "
    "supervisor.\n"
    "- To request over 80 hours of LWOP, you must get written approval from your immediate "
    "supervisor and Business Unit Director.\n\n"
    "Once approvals are received, please submit a copy of the email thread to "
    "TTS-peopleops@gsa.gov."
)


def test_each_thing_a_question_asks_is_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "Whose written sign-off do I need for that much, and where do I send the approvals
    once I have them?" (TTS probe): the quotes followed the words of the first ask, and
    where to send was left out. Each ask gets its best unit from the documents quoted.
    Reverse proof: read as one question, the address is missing."""
    question = (
        "I'd like to take about three weeks of unpaid leave, so roughly 120 hours. Whose "
        "written sign-off do I need for that much, and where do I send the approvals once I "
        "have them?"
    )
    assert extractive.asks_of(question) == [
        "Whose written sign-off do I need for that much",
        "where do I send the approvals once I have them?",
    ]
    assert extractive.asks_of("Which benefits are reimbursable and are taxed?") == []
    page = snippet("S1", UNPAID, "section=Types of leave > Unpaid leave", "files:leave.md")
    said = answer(question, page)
    assert "Business Unit Director" in said and "TTS-peopleops@gsa.gov" in said, said
    monkeypatch.setattr(extractive, "asks_of", lambda question: [])
    said = answer(question, page)
    assert "Business Unit Director" in said and "TTS-peopleops@gsa.gov" not in said, said


TRANSIT = (
    "Enrolling in transit benefit\n"
    "Make sure to select the Transit Coordinator in the Region in which you reside.\n"
    "- Go to\n"
    "  https://transitapp.ost.dot.gov/\n"
    "- Click on Register\n"
    "- Enter information into the application. Here are common selections:\n"
    "    - Transit Coordinator:\n"
    "      - DC employees: FAS-Transit Subsidy\n"
    "      - Other regions: consult the transit subsidy coordinators list\n"
    "    - Point of Contact:\n"
    "      - DC employees: Central Office FAS Transit Subsidy\n"
    "- Questions go to gsa-transit-subsidy@gsa.gov\n"
    "- Scroll down and click Continue to submit"
)


def test_a_label_alone_is_quoted_with_its_sub_items_and_an_address_is_a_website(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "I work for TTS in DC and want to sign up for the transit subsidy. Which website do I
    enroll on, and what do I pick for the transit coordinator?" (TTS probe) was answered
    "- Transit Coordinator:" and nothing under it, and never with the address: the item
    the question names is a label alone, whose sub-items say what to pick, and a unit
    holding a web address is what "which website" asks for, though it says no "website".
    An e-mail address is no website. Reverse proofs: without the sub-items the choice is
    missing; without reading an address as a website it is not quoted."""
    page = snippet("S1", TRANSIT, "section=Enrolling in transit benefit", "files:transit.md")
    question = (
        "I work for TTS in DC and want to sign up for the transit subsidy. Which website do I "
        "enroll on, and what do I pick for the transit coordinator?"
    )
    said = answer(question, page)
    assert "FAS-Transit Subsidy" in said and "transitapp.ost.dot.gov" in said, said
    # the sub-items of the label named, not those of the next label
    assert "Central Office" not in said and "gsa-transit-subsidy@" not in said, said
    assert extractive._WEB_ADDRESS.search("- Go to vltp.gsa.gov and log in")
    assert not extractive._WEB_ADDRESS.search("Questions go to gsa-transit-subsidy@gsa.gov")
    monkeypatch.setattr(extractive, "_with_sub_items", lambda units, members, named: named)
    assert "FAS-Transit Subsidy" not in answer(question, page)
    monkeypatch.undo()
    monkeypatch.setattr(extractive, "_WEB_WORDS", frozenset())
    assert "transitapp.ost.dot.gov" not in answer(question, page)


AUGUST_2008 = (
    "Monthly Budget Review, August 6, 2008\n"
    "CBO estimates that for the first 10 months of fiscal year 2008, the federal budget "
    "deficit was about $371 billion, $213 billion more than the deficit recorded over the "
    "same period in 2007. While revenues were about 1 percent lower than in the same period "
    "last year, outlays over the same period have grown by almost 9 percent.\n\n"
    "CBO estimates that a deficit of $102 billion was recorded for the month of July, about "
    "$65 billion more than recorded in July 2007. Another major factor contributing to the "
    "increase was the $15 billion disbursed in July 2008 by the FDIC."
)


def test_a_year_named_only_as_what_is_compared_with_is_no_year_of_the_amounts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "What was the deficit in July 2007?" (a new variant of the federal figures) was
    answered "a deficit of $102 billion was recorded for the month of July", July 2008's,
    because the sentence goes on "… more than recorded in July 2007"; "the first nine
    months of fiscal year 2007" got fiscal 2008's ten months. A year named only after
    "than" or "compared with" is what the amounts are compared with, and a month or a
    count of months of another year (by the sentence or its heading) answers none of the
    year asked: nothing is said rather than a wrong figure. Reverse proof: reading the
    comparison's year as the sentence's own, July 2008's deficit is given for July 2007."""
    page = snippet("S1", AUGUST_2008, "lines=1-9", "files:cbo.md")
    assert answer("What was the deficit in July 2007?", page) == ""
    assert answer("What was the deficit for the first nine months of fiscal year 2007?", page) == ""
    assert "$102 billion" in answer("How large was the federal deficit in July 2008?", page)
    grew = answer("How much more was the deficit in July 2008 than in July 2007?", page)
    assert "$65 billion" in grew, grew
    # "more than $500 billion" says how much, and compares with nothing; a heading's year
    # is when it was written; "up from … in July 2007" is what is compared with
    more = snippet("S2", "Revenues were more than $500 billion in 2007.")
    later = snippet("S3", "Revenues were $600 billion in 2008.")
    assert "$500 billion" in answer("What were revenues in 2007?", more, later)
    december = snippet(
        "S4",
        "Monthly Budget Review, January 8, 2009\nThe deficit in December was $51 billion.",
    )
    assert "$51 billion" in answer("What was the deficit in December 2008?", december)
    up = snippet(
        "S5", "The deficit in July 2008 was $102 billion, up from $37 billion in July 2007."
    )
    assert "$102 billion" not in answer("What was the deficit in July 2007?", up)
    monkeypatch.setattr(extractive, "_COMPARED_TAIL", re.compile(r"(?!x)x"))
    assert "$102 billion" in answer("What was the deficit in July 2007?", page)


OVERVIEW_JA = (
    "当期における当社グループの連結売上高は、1兆1,599億円(前期比2.6%増)となりました。"
    "今期は、売上高は横ばいの1兆1600億円としている。"
)


def test_a_forecast_asked_is_a_sentence_stating_one_and_a_whole_year_no_part_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "コニカミノルタの2025年3月期の売上高の予想はいくらですか?" (a new variant of the federal
    figures) was answered with the year before's actual (1兆1,599億円), a wrong figure: a
    forecast asked is a sentence stating one (今期…としている). "What deficit did CBO expect
    for all of fiscal year 2008?" opened with the first ten months' $371 billion, a part sold
    as the year: where a sentence states the whole year, one stating part of it (months, a
    month) is left out. Reverse proofs: without either reading, the actual and the part
    are quoted."""
    page = snippet("S1", OVERVIEW_JA, "section=決算会見", "files:konica-overview.md")
    question = "コニカミノルタの2025年3月期の売上高の予想はいくらですか?"
    said = answer(question, page)
    assert "1兆1600億円" in said and "1兆1,599億円" not in said, said
    year = "What deficit did CBO expect for all of fiscal year 2008?"
    whole = " CBO estimates that the deficit for fiscal year 2008 will be about $400 billion."
    page = snippet("S2", AUGUST_2008 + whole, "lines=1-9", "files:cbo.md")
    said = answer(year, page)
    assert "$400 billion" in said, said
    assert "$371 billion" not in said and "$102 billion" not in said, said
    monkeypatch.setattr(extractive, "_ASKS_FORECAST", re.compile(r"(?!x)x"))
    assert "1兆1,599億円" in answer(question, snippet("S1", OVERVIEW_JA))
    monkeypatch.setattr(extractive, "_ONE_MONTH", re.compile(r"(?!x)x"))
    monkeypatch.setattr(extractive, "_month_spans", lambda text: set())
    assert "$371 billion" in answer(year, page)


def test_how_much_a_line_was_up_is_the_clause_about_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "How much were outlays up in the first eight months of fiscal 2019?" got both the
    revenues' and the outlays' amounts: "were … up" asks how much it rose, as "rise" does,
    so the clause about outlays is the answer; "how much was down to the rebates" asks
    what it was owed to, no comparison. Reverse proof: without "up" read as a change, the
    revenues' amount is quoted too."""
    page = snippet(
        "S1",
        "Revenues were $49 billion higher and outlays were $255 billion higher than during the "
        "first eight months of 2018.",
        "section=Monthly Budget Review for May 2019",
        "files:cbo.md",
    )
    question = "How much were outlays up in the first eight months of fiscal 2019?"
    said = answer(question, page)
    assert "$255 billion" in said and "$49 billion" not in said, said
    assert not extractive._ASKS_COMPARISON.search("How much was down to the tax rebates?")
    assert not extractive._ASKS_COMPARISON.search("What is the sign up fee?")
    assert not extractive._ASKS_COMPARISON.search("Is the VPN down?")
    pattern = extractive._ASKS_COMPARISON.pattern.replace(
        r"|\b(?:was|were|is|are)\s+(?:\w+\s+){1,3}(?:up|down)\s+(?:by|from|in|over|on|during"
        r"|since|compared|year)\b",
        "",
    )
    assert pattern != extractive._ASKS_COMPARISON.pattern
    monkeypatch.setattr(extractive, "_ASKS_COMPARISON", re.compile(pattern, re.IGNORECASE))
    assert "$49 billion" in answer(question, page)


SCREENING_JA = (
    "バックグラウンドスクリーニング\n"
    "追加のスクリーニングには、該当する場合、現地法に従って、デジタルまたは文書ベースの身元確認"
    "およびクレジットチェックが含まれる場合があります。"
    "すべての候補者について、過去 5 年間の雇用履歴および/または直近の 3 つの雇用主が検証されます。"
    "犯罪記録のレビューが可能な管轄区域では、犯罪記録が要求されます。"
)


def test_how_far_back_in_japanese_opens_with_the_sentence_stating_the_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "入社前のバックグラウンドチェックでは前の職歴をどこまでさかのぼって確認されますか?"
    (how far back is my work history checked; GitLab set, probe split) was answered with the
    sentences sharing its other words (確認, スクリーニング) and never the one saying "過去 5
    年間": "どこまでさかのぼって" asks a length, as 何年間 does. Reverse proof: without that
    reading, the sentence stating the length does not open the answer."""
    page = snippet("S1", SCREENING_JA, "section=バックグラウンドスクリーニング", "files:ja.md")
    question = (
        "内定をもらったんですが、入社前のバックグラウンドチェックでは前の職歴をどこまで"
        "さかのぼって確認されますか?"
    )
    assert "過去 5 年間" in quoted(answer(question, page))[0]
    monkeypatch.setattr(
        extractive,
        "_ASKS_DURATION",
        re.compile(extractive._ASKS_DURATION.pattern.replace("|どこまで(?:さかのぼ|遡)", "")),
    )
    assert "過去 5 年間" not in quoted(answer(question, page))[0]


def test_review_cases_of_the_reader_stay_as_they_were() -> None:
    """Cases a review of the reader's mends found: "What training was required …" asks for
    no amount; a sentence naming a year but no figure is not "the period" of a later
    amount; an ask already answered by a quote (whole or cut) adds no copy of it."""
    assert not extractive._ASKS_WHAT_WAS.search("What training was required in 2024?")
    assert extractive._ASKS_WHAT_WAS.search("What deficit did the government run in July 2008?")
    section = (
        "Treasury moved its offices in 1998. Staffing levels were unchanged. Corporate "
        "receipts totaled $280 billion during the period."
    )
    said = quoted(answer("How much were corporate receipts?", snippet("S1", section)))
    assert not any("1998" in q for q in said), said
    question = (
        "What was the deficit for the first eight months of fiscal 2019? How much did "
        "outlays rise compared with a year earlier?"
    )
    said = quoted(answer(question, snippet("S1", MAY_2019)))
    assert sum("$738 billion" in q for q in said) == 1, said


@pytest.mark.parametrize("marks", [("A.", "B.", "C."), ("a)", "b)", "c)"), ("(a)", "(b)", "(c)")])
def test_a_lettered_list_is_a_list(marks: tuple[str, str, str]) -> None:
    """ "What counts as an incidental expense under the travel rules?" over the Federal
    Travel Regulation's page, whose list is lettered ("A. Fees and tips …", "B. …", "C.
    Mailing cost …"): read as paragraphs, B was left out of the answer (federal probe). A
    lettered list is a list, quoted whole under its lead as a numbered one is. Reverse
    proof: the same list numbered gives the same quote, markers aside."""
    lead = "The Federal Travel Regulation describes incidental expenses as:"
    items = [
        "Fees and tips given to porters, baggage carriers, bellhops and hotel maids.",
        "Transportation between places of lodging or business and places where meals are taken.",
        "Mailing cost associated with filing travel vouchers.",
    ]
    question = "What counts as an incidental expense under the travel rules?"

    def quote(markers: Sequence[str]) -> list[str]:
        text = "\n\n".join([lead, *(f"{m} {item}" for m, item in zip(markers, items, strict=True))])
        return quoted(answer(question, snippet("S1", text)))

    lettered = quote(marks)
    assert lettered == [lead, *(f"{m} {item}" for m, item in zip(marks, items, strict=True))]
    assert [q.split(" ", 1)[1] for q in quote(("1.", "2.", "3."))[1:]] == items


def test_an_amount_for_a_fiscal_year_the_sentence_names_answers_no_other_year() -> None:
    """ "What was the deficit in 2024?" over CBO's monthly reviews: "$738 billion for the
    first eight months of fiscal year 2019" was quoted because no sentence named 2024, and
    an amount of another year read as the year asked. A sentence naming the fiscal year of
    its amount answers no other year, even when nothing else is left. Reverse proofs:
    asked about 2019 it answers; a sentence naming no year may still be of the year asked
    (its document's), and a year that is no fiscal year ("since 2003") excludes nothing."""
    fy2019 = "The federal budget deficit was $738 billion for the first eight months of fiscal year 2019."
    assert quoted(answer("What was the deficit in 2024?", snippet("S1", fy2019))) == []
    assert quoted(answer("What was the deficit in fiscal year 2019?", snippet("S1", fy2019))) == [
        fy2019
    ]
    unnamed = "The federal budget deficit was $1.8 trillion for the fiscal year."
    assert quoted(answer("What was the deficit in 2024?", snippet("S1", unnamed))) == [unnamed]
    since = "The deficit was $1.8 trillion, the largest since 2003."
    assert quoted(answer("What was the deficit in 2024?", snippet("S1", since))) == [since]


def test_a_paragraph_opening_with_an_initial_is_prose() -> None:
    """Reverse proof of the lettered list: a letter opens an item only where a line carries
    the letter before or after it. "J. Smith approves all travel. …" is three sentences,
    and "Is airport parking reimbursed?" quotes the one that answers, not the paragraph."""
    text = (
        "J. Smith approves all travel. Parking at the airport is not reimbursed. "
        "Taxis are reimbursed with a receipt."
    )
    assert len(extractive.split_sentences(text)) == 3
    assert quoted(answer("Is airport parking reimbursed?", snippet("S1", text))) == [
        "Parking at the airport is not reimbursed."
    ]


def test_a_month_asked_without_a_year_keeps_a_sentence_naming_its_fiscal_year() -> None:
    """Reverse proof of the fiscal-year rule: it applies only where the question names a
    year. "What was the deficit in July?" is answered by July's sentence, which names the
    fiscal year it falls in."""
    july = "CBO estimates a deficit of $120 billion in July, the tenth month of fiscal year 2019."
    assert quoted(answer("What was the deficit in July?", snippet("S1", july))) == [july]


def test_a_run_in_label_and_what_it_labels_are_one_sentence() -> None:
    split_sentences = extractive.split_sentences
    """"**What?** – Sharing and re-using …" (a design authority's template) was cut after
    "What?", and the answer quoted a sentence opening with a stray "– "."""
    text = (
        "What? – Sharing and re-using existing resources is encouraged. Benefits include "
        "lower costs.\nWhy? — To comply with point 8."
    )
    assert split_sentences(text) == [
        "What? – Sharing and re-using existing resources is encouraged.",
        "Benefits include lower costs.",
        "Why? — To comply with point 8.",
    ]
    # a no-break space before the dash, as HTML's "&nbsp;–" writes it, is a space too
    assert split_sentences("Why?\u00a0– To comply. Next.") == ["Why?\u00a0– To comply.", "Next."]
    # a dash opening the next line is a list of its own (Word and PDF bullets)
    bullets = "Eligible staff:\n– Full-time get 25 days.\n– Part-time pro rata.\n– Not others."
    assert split_sentences(bullets)[1:] == ["– Part-time pro rata.", "– Not others."]
    # a hyphen after a full stop still starts a new sentence, and so does a list item
    assert split_sentences("It ends. -5 degrees is cold.") == ["It ends.", "-5 degrees is cold."]
    assert split_sentences("Steps:\n- First.\n- Second.") == ["Steps:", "- First.", "- Second."]


def test_how_long_a_text_may_be_is_answered_by_its_length() -> None:
    """ "How long may the description of a principle be?" asks a length, not a time: the
    sentence "This description should be no longer than 2 paragraphs" answers it, where
    it was refused for stating no duration. Reverse proof: a page that states no length
    still answers no "how long"."""
    page = (
        "Writing a principle\nEach principle has a description. This description should be "
        "no longer than 2 paragraphs. Link to the standards that support it."
    )
    units = quoted(answer("How long may the description of a principle be?", snippet("S1", page)))
    assert units and "no longer than 2 paragraphs" in units[0], units
    unstated = page.replace("no longer than 2 paragraphs", "short")
    assert (
        quoted(answer("How long may the description of a principle be?", snippet("S1", unstated)))
        == []
    )


KUBERNETES_PAGE = (
    "Blue Green\nConsiderations:\n- You have to run 2 versions of the service at one time, "
    "which increases cost\n- Can require additional setup/maintenance with some types of host "
    "infrastructure e.g. Kubernetes\n\nCanary Deployments\nConsiderations:\n- More difficult "
    "to use with vanilla Kubernetes"
)


def test_which_version_is_answered_only_by_a_sentence_stating_one() -> None:
    """ "Which Kubernetes version must our clusters run?" over deployment pages that name
    Kubernetes and "2 versions of the service" but no version of it: no answer, rather than
    bullets sharing the question's words. A page that states one is quoted."""
    question = "Which Kubernetes version must our clusters run?"
    assert quoted(answer(question, snippet("S1", KUBERNETES_PAGE))) == []
    stated = KUBERNETES_PAGE + "\n\nPlatform\nClusters must run Kubernetes 1.29 or later."
    units = quoted(answer(question, snippet("S1", stated)))
    assert units and "Kubernetes 1.29" in units[0], units


def test_reverse_proof_without_reading_which_version_the_bullets_are_quoted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(extractive, "_ASKS_VERSION", re.compile(r"(?!x)x"))
    units = quoted(
        answer("Which Kubernetes version must our clusters run?", snippet("S1", KUBERNETES_PAGE))
    )
    assert units and "Kubernetes" in " ".join(units), units


def test_the_rule_opens_the_answer_before_an_example_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked how often and how long, the sabbatical's rule ("After every 5 years … 12
    contiguous weeks") and an example of it ("For instance, … a 12 week sabbatical") hold
    as many of the question's words, and the example's passage ranked first: the example
    opened the answer. The rule does. Reverse proof: with no sentence taken for an example,
    the example opens it again."""
    example = snippet(
        "S1",
        "For instance, an employee who has accrued 3 sick days before taking a 12 week "
        "sabbatical will still have 3 available sick days when they return.",
    )
    rule = snippet(
        "S2",
        "After every 5 years of working here, employees are encouraged to take a one-quarter "
        "(12 contiguous weeks) paid sabbatical.",
    )
    question = "How often can I take a sabbatical and how long does it last?"
    assert quoted(answer(question, example, rule))[0].startswith("After every 5 years")
    monkeypatch.setattr(extractive, "_EXAMPLE", re.compile(r"(?!x)x"))
    assert quoted(answer(question, example, rule))[0].startswith("For instance")
