"""Steps written as headings ("## 1. Announce the date", or an ``<h4>`` in each ``<li>`` of
an ``<ol>``) are what a question asking for the steps, or for what comes after one, wants;
each heading's section alone holds one step, retrieval returns some of them, and a heading
is never quoted. Pinned here: the ingest lists the step headings in a section of their own
(``outline=steps``), the answer is that list in order, each line cited, and the item after
the step named; a question asking something else never quotes it.
"""

from __future__ import annotations

from .conftest import Handbook

_FILLER = (
    "The owning team keeps a record of what was done and when, and tells the service "
    "desk so that questions from users reach the right people. "
)

RETIRE = {
    "retire.md": "---\ntitle: Retire a service\n---\n\n"
    + "".join(
        f"## {n}. {head}\n\n{first} {_FILLER * 3}\n\n"
        for n, (head, first) in enumerate(
            [
                ("Announce the date", "Tell the users of the service when it will stop."),
                ("Move the traffic", "Point the domain at the replacement service."),
                ("Export the data", "Copy the records to the archive bucket."),
                ("Switch it off", "Stop the servers and remove the scheduled jobs."),
                ("Delete the accounts", "Remove the service accounts and their keys."),
                ("Update the catalogue", "Mark the service as retired in the catalogue."),
            ],
            start=1,
        )
    ),
    "budget.md": "# Hosting budget\n\nA retired service stops costing money the month after "
    "its servers are switched off.\n",
}

HIRING = {
    "careers.html": """<html><head><title>Careers</title></head><body>
<h2>Join us</h2><p>We hire engineers and designers across the country.</p>
<h3>How we hire</h3>
<p>Here is what you can expect when you apply:</p>
<ol>
<li><div><h4>Application received</h4><p>We confirm by email that we have your application.</p></div></li>
<li><div><h4>Screening call</h4><p>A recruiter calls you for twenty minutes.</p></div></li>
<li><div><h4>Panel interviews</h4><p>You meet three people from the team by video.</p></div></li>
<li><div><h4>Reference checks</h4><p>We call two people you have worked with.</p></div></li>
<li><div><h4>Offer</h4><p>We send the formal offer and agree a start date.</p></div></li>
</ol>
</body></html>
""",
}

POLICY = {
    "travel.md": """# Travel policy

This policy applies to everyone travelling on company business.

## 1. Booking

All trips are booked through the travel portal, which finds the fare.

## 2. Hotels

The hotel limit is EUR 180 per night in every city.

## 3. Expenses

Submit expense reports within 30 days of returning.
""",
}


def test_the_steps_asked_for_are_the_step_headings_in_order(handbook: Handbook) -> None:
    engine = handbook(RETIRE, "ana")
    result = engine.ask("What are the steps to retire a service?", "ana")
    lines = result.answer.split("\n")
    heads = [
        "1. Announce the date — Tell the users of the service when it will stop. [S1]",
        "2. Move the traffic — Point the domain at the replacement service. [S1]",
        "3. Export the data — Copy the records to the archive bucket. [S1]",
        "4. Switch it off — Stop the servers and remove the scheduled jobs. [S1]",
        "5. Delete the accounts — Remove the service accounts and their keys. [S1]",
        "6. Update the catalogue — Mark the service as retired in the catalogue. [S1]",
    ]
    assert lines[:6] == heads, result.answer
    assert result.citations[0].locator == "section=(top),outline=steps"
    # each step's first sentence is quoted once, in its line of the list
    assert result.answer.count("Tell the users of the service") == 1, result.answer


def test_what_comes_after_a_step_heading_in_a_list_is_the_next_one(handbook: Handbook) -> None:
    engine = handbook(HIRING, "ana")
    result = engine.ask("In the hiring process, what comes after the panel interviews?", "ana")
    assert result.answer.startswith(
        "4. Reference checks — We call two people you have worked with. [S1]"
    ), result.answer
    before = engine.ask("What happens before the panel interviews?", "ana")
    assert before.answer.startswith("2. Screening call — "), before.answer


def test_the_steps_are_listed_for_a_question_asking_for_them(handbook: Handbook) -> None:
    engine = handbook(HIRING, "ana")
    result = engine.ask("What are the steps of the hiring process?", "ana")
    lines = result.answer.split("\n")
    assert [line.split(" — ")[0] for line in lines[:5]] == [
        "1. Application received",
        "2. Screening call",
        "3. Panel interviews",
        "4. Reference checks",
        "5. Offer",
    ], result.answer


def test_a_question_asking_no_list_never_quotes_the_headings(handbook: Handbook) -> None:
    engine = handbook(POLICY, "ana")
    result = engine.ask("What is the hotel limit per night?", "ana")
    assert "EUR 180" in result.answer, result.answer
    assert " — " not in result.answer, result.answer
    assert all("outline=steps" not in c.locator for c in result.citations)
