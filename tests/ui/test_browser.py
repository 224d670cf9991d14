"""The browser UI in a real headless Chromium, driven by Selenium.

Debian's ``chromium`` and ``chromium-driver`` are what runs here (``python3 tasks.py test``
installs them when missing; browser downloads do not work offline). Each scenario signs in as
a person would — typing a token into the form, or through the identity provider — clicks, waits
for what a person would wait for, checks what the page says, and saves a screenshot under the
test's temporary directory.

The server is the real app under uvicorn on loopback, over a real index. The engine's clock is
the test's, so "the SLA passes" is a step of the test, not a sleep.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from api.conftest import create_token, serving_app
from clearance.api.app import create_app
from clearance.app import Clearance
from clearance.config import load_settings
from clitools import cli
from idp_server import Provider

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

if CHROMIUM is None or CHROMEDRIVER is None:
    if os.environ.get("CI"):
        pytest.fail(
            "Chromium and ChromeDriver are required in CI (python3 tasks.py test installs "
            "the Debian packages chromium and chromium-driver)",
            pytrace=False,
        )
    pytest.skip(
        "Chromium/ChromeDriver not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[corpora.handbook]
description = "The employee handbook"
revocation_sla = "1h"

[corpora.hr]
description = "HR cases"
revocation_sla = "1h"

[assistants.general]
description = "Policies and handbook"
corpora = ["handbook", "hr"]
max_sensitivity = "CONFIDENTIAL"

[server]
rate_limit = "off"
"""

DIRECTORY = {
    "users": [
        {"id": "ann", "active": True, "attributes": {}},
        {"id": "carl", "active": True, "attributes": {}},
        {"id": "bob", "active": False, "attributes": {}},
        {"id": "root", "active": True, "attributes": {}},
    ],
    "groups": [
        {"id": "staff", "members": ["user:ann", "user:bob", "user:root"]},
        {"id": "contractors", "members": ["user:carl"]},
        {"id": "hr", "members": ["user:root"]},
    ],
}

HR_TITLE = "Investigation of the Osaka warehouse complaint"
ROOT = Path(__file__).resolve().parents[2]
# A two-page PDF whose merit budgets are on page 2, behind a first page of other text.
GUIDE_TITLE = "Manager guide"
GUIDE_URI = "https://files.example/guides/manager-guide.pdf"


class Clock:
    """The engine's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Site:
    url: str
    tokens: dict[str, str]
    clock: Clock


def make_project(root: Path) -> Path:
    config = root / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    handbook = root / "handbook"
    handbook.mkdir()
    (handbook / "_meta.json").write_text(
        json.dumps({"acl": ["group:staff", "group:contractors"], "corpus": "handbook"}),
        encoding="utf-8",
    )
    (handbook / "travel.md").write_text(
        "# Travel policy\n\n## Flights\n\nFlights under six hours are booked in economy class."
        " Longer flights may be booked in premium economy.\n\n## Trains\n\n"
        "Book trains in second class through the travel desk.\n",
        encoding="utf-8",
    )
    guide = ROOT / "examples" / "acme" / "ops" / "manager-guide-performance-reviews.pdf"
    shutil.copy(guide, handbook / guide.name)
    (handbook / f"{guide.name}.meta.json").write_text(
        json.dumps(
            {"title": GUIDE_TITLE, "uri": GUIDE_URI, "updated_at": "2026-09-01T09:00:00+09:00"}
        ),
        encoding="utf-8",
    )
    (handbook / "results.md").write_text(
        "# Regional results\n\nOperating profit by region, in USD m. Figures are audited.\n\n"
        "| Region | FY2024 | FY2025 |\n|---|---|---|\n| Japan | 55.0 | 61.2 |\n"
        "| United States | 40.1 | 44.9 |\n| Europe | 20.3 | 22.8 |\n\n"
        "## Outlook\n\nThe outlook for FY2026 is unchanged.\n",
        encoding="utf-8",
    )
    hr = root / "hr"
    hr.mkdir()
    (hr / "_meta.json").write_text(
        json.dumps({"acl": ["group:hr"], "corpus": "hr"}), encoding="utf-8"
    )
    (hr / "osaka.md").write_text(
        f"# {HR_TITLE}\n\nThe complaint against the Osaka warehouse manager was upheld; "
        "a written warning was issued on 3 March.\n",
        encoding="utf-8",
    )
    (root / "directory.json").write_text(json.dumps(DIRECTORY), encoding="utf-8")
    for folder in (handbook, hr):
        rc, _, err = cli("--config", config, "ingest", folder, "--json")
        assert rc == 0, err
    rc, _, err = cli("--config", config, "directory", "sync", root / "directory.json")
    assert rc == 0, err
    return config


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    config = make_project(tmp_path_factory.mktemp("site"))
    tokens = {
        user: create_token(config, user, *extra)["token"]
        for user, extra in (("ann", ()), ("carl", ()), ("bob", ()), ("root", ("--admin",)))
    }
    clock = Clock()
    settings = load_settings(config)
    engine = Clearance.open(settings, clock=clock)
    try:
        with serving_app(create_app(settings, clearance=engine)) as url:
            yield Site(url, tokens, clock)
    finally:
        engine.close()


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium-profile")
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    browser = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def browser(driver: WebDriver, site: Site, tmp_path: Path) -> Iterator[WebDriver]:
    """The shared browser, signed out, whose screen is saved when the scenario ends."""
    driver.set_window_size(1200, 900)
    driver.get(f"{site.url}/signin")
    driver.delete_all_cookies()
    yield driver
    driver.save_screenshot(str(tmp_path / "screen.png"))
    assert (tmp_path / "screen.png").stat().st_size > 0


def wait(driver: WebDriver, seconds: float = 20) -> WebDriverWait:  # type: ignore[type-arg]
    return WebDriverWait(driver, seconds)


def sign_in(driver: WebDriver, site: Site, user: str) -> None:
    driver.get(f"{site.url}/signin")
    field = driver.find_element(By.ID, "token")
    field.send_keys(site.tokens[user])
    driver.find_element(By.CSS_SELECTOR, "#signin-form button[type=submit]").click()
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "[data-testid=user]")))
    assert driver.find_element(By.CSS_SELECTOR, "[data-testid=user]").text == user


def ask(driver: WebDriver, question: str) -> str:
    """Type the question, press Ask, wait for the streamed answer to settle; its status."""
    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    driver.find_element(By.ID, "ask-button").click()
    article = wait(driver).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#answer article.answer"))
    )
    # The script, not a page load, showed it: the browser is still on the ask page.
    assert urlsplit(driver.current_url).path == "/"
    return str(article.get_attribute("data-status"))


def main_text(driver: WebDriver) -> str:
    return str(driver.find_element(By.TAG_NAME, "main").text)


# --------------------------------------------------------------------------- scenarios


def test_an_employee_asks_sees_a_streamed_cited_answer_and_opens_the_preview(
    browser: WebDriver, site: Site, tmp_path: Path
) -> None:
    sign_in(browser, site, "ann")
    status = ask(browser, "Which class are flights under six hours booked in?")
    assert status == "answered"
    section = browser.find_element(By.ID, "answer")
    assert int(section.get_attribute("data-streamed-sentences") or 0) >= 1
    answer = section.find_element(By.CSS_SELECTOR, "p.text").text
    assert "economy class" in answer and "[S1]" in answer
    citation = section.find_element(By.CSS_SELECTOR, "ol.citations li#S1")
    assert "Travel policy" in citation.text
    assert citation.find_element(By.CSS_SELECTOR, ".trust").text.endswith("source")
    browser.save_screenshot(str(tmp_path / "answer.png"))

    citation.find_element(By.CSS_SELECTOR, "a.title").click()
    wait(browser).until(ec.title_contains("Travel policy"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Travel policy"
    assert "economy class" in browser.find_element(By.CSS_SELECTOR, "#passage mark").text


def test_a_contractor_gets_the_fixed_refusal_and_the_same_404_for_the_hr_document(
    browser: WebDriver, site: Site, tmp_path: Path
) -> None:
    sign_in(browser, site, "carl")
    status = ask(browser, "What happened with the Osaka warehouse complaint investigation?")
    assert status != "answered"
    shown = browser.find_element(By.ID, "answer").text
    assert "Osaka" not in shown.replace("What happened with the Osaka", "")
    assert "written warning" not in shown and HR_TITLE not in shown
    browser.save_screenshot(str(tmp_path / "refusal.png"))

    browser.get(f"{site.url}/documents/files:osaka.md")
    hidden = (browser.title, main_text(browser), browser.page_source)
    browser.save_screenshot(str(tmp_path / "hidden-404.png"))
    browser.get(f"{site.url}/documents/files:no-such-document.md")
    absent = (browser.title, main_text(browser), browser.page_source)
    assert hidden == absent
    assert "Not found" in hidden[1] and "written warning" not in hidden[2]


def test_a_disabled_account_sees_no_data(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, "bob")
    notice = browser.find_element(By.ID, "inactive")
    assert "not active" in notice.text
    assert not browser.find_elements(By.ID, "ask-form")
    assert not browser.find_elements(By.TAG_NAME, "select")
    browser.get(f"{site.url}/documents/files:travel.md")
    assert "Not found" in main_text(browser) and "economy" not in browser.page_source


def test_an_administrator_sees_a_corpus_fail_closed_after_its_sla(
    browser: WebDriver, site: Site, tmp_path: Path
) -> None:
    sign_in(browser, site, "root")
    browser.find_element(By.LINK_TEXT, "Administration").click()
    wait(browser).until(ec.presence_of_element_located((By.ID, "corpora")))
    state = browser.find_element(By.CSS_SELECTOR, "tr[data-corpus=hr] td.state")
    assert state.text == "serving"
    browser.save_screenshot(str(tmp_path / "admin-serving.png"))

    site.clock.now += timedelta(hours=2)  # past the one-hour revocation SLA
    try:
        browser.refresh()
        state = browser.find_element(By.CSS_SELECTOR, "tr[data-corpus=hr] td.state")
        assert state.text == "fail closed"
        browser.save_screenshot(str(tmp_path / "admin-fail-closed.png"))
        # And it is not only a label: the employee's answers from that corpus stop.
        browser.get(f"{site.url}/documents/files:osaka.md")
        assert "Not found" in main_text(browser)
    finally:
        site.clock.now -= timedelta(hours=2)


def test_single_sign_on_in_the_browser(driver: WebDriver, tmp_path: Path) -> None:
    (tmp_path / "sso").mkdir()
    config = make_project(tmp_path / "sso")
    with Provider(user="ann") as idp:
        config.write_text(CONFIG + "\n" + idp.settings(), encoding="utf-8")
        with serving_app(create_app(load_settings(config))) as url:
            driver.get(f"{url}/signin")
            driver.delete_all_cookies()
            driver.get(f"{url}/signin")
            driver.find_element(By.ID, "sso").click()
            wait(driver).until(
                ec.presence_of_element_located((By.CSS_SELECTOR, "[data-testid=user]"))
            )
            assert driver.find_element(By.CSS_SELECTOR, "[data-testid=user]").text == "ann"
            assert idp.token_errors == []
            driver.save_screenshot(str(tmp_path / "sso.png"))


# --------------------------------------------------------------------------- previews at the cited place


def opens_at(driver: WebDriver, element: WebElement) -> bool:
    """Whether the window shows the start of ``element``: its top edge is on screen."""
    return bool(
        driver.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return r.height > 0 && r.top >= 0 && r.top < window.innerHeight"
            " && r.left >= 0 && r.right <= window.innerWidth;",
            element,
        )
    )


def test_a_citation_opens_its_page_highlighted_with_a_link_to_that_page(
    browser: WebDriver, site: Site, tmp_path: Path
) -> None:
    sign_in(browser, site, "ann")
    assert ask(browser, "What is the merit budget in the United States?") == "answered"
    answer = browser.find_element(By.ID, "answer")
    cited = [
        li
        for li in answer.find_elements(By.CSS_SELECTOR, "ol.citations li")
        if li.find_element(By.CSS_SELECTOR, ".locator").text == "page 2"
    ]
    assert cited, answer.text
    browser.set_window_size(1200, 500)  # the passage must be scrolled to, not merely present
    cited[0].find_element(By.CSS_SELECTOR, "a.locator").click()
    wait(browser).until(ec.title_contains(GUIDE_TITLE))
    browser.save_screenshot(str(tmp_path / "pdf-page-2.png"))

    passage = browser.find_element(By.ID, "passage")
    marked = passage.find_element(By.TAG_NAME, "mark")
    assert "3.8% in the United States" in marked.text
    # Not the document's first 500 characters: page 1 is at most context, never the citation.
    assert "This guide is for people managers" not in marked.text
    assert not browser.find_elements(By.ID, "preview")
    assert opens_at(browser, marked)
    assert browser.find_element(By.ID, "cited-at").text == "page 2"
    location = browser.find_element(By.ID, "location")
    assert location.tag_name == "a" and location.get_attribute("href") == f"{GUIDE_URI}#page=2"
    updated = browser.find_element(By.ID, "updated")
    assert updated.text == "1 September 2026"  # 09:00 in Tokyo is midnight UTC
    assert updated.get_attribute("datetime") == "2026-09-01T00:00:00+00:00"


def test_a_cited_table_row_and_a_figure_cell_open_highlighted(
    browser: WebDriver, site: Site, tmp_path: Path
) -> None:
    sign_in(browser, site, "ann")
    assert ask(browser, "What was the operating profit in Japan in FY2025?") == "answered"
    rows = [
        a
        for a in browser.find_elements(By.CSS_SELECTOR, "#answer a.locator")
        if "row Japan" in a.text
    ]
    assert rows, browser.find_element(By.ID, "answer").text
    rows[0].click()
    wait(browser).until(ec.title_contains("Regional results"))
    passage = browser.find_element(By.ID, "passage")
    assert (
        passage.find_element(By.TAG_NAME, "mark").text
        == "Region: Japan | FY2024: 55.0 | FY2025: 61.2"
    )
    context = [c.text for c in passage.find_elements(By.CSS_SELECTOR, ".context")]
    assert context == [
        "Regional results\nOperating profit by region, in USD m. Figures are audited.",
        "Region: United States | FY2024: 40.1 | FY2025: 44.9",
    ]
    browser.save_screenshot(str(tmp_path / "row.png"))

    # A figure's citation names its cell: the row's chunk opens with that cell marked.
    locator = quote("section=Regional results,table=1,row=Japan,col=FY2025")
    browser.get(f"{site.url}/documents/files:results.md?locator={locator}#cited")
    marks = browser.find_elements(By.CSS_SELECTOR, "#passage mark")
    assert [m.text for m in marks] == ["FY2025: 61.2"]
    assert "Region: Japan" in browser.find_element(By.CSS_SELECTOR, "#passage .cited").text
    cell = "Regional results · table 1 · row Japan · column FY2025"
    assert browser.find_element(By.ID, "cited-at").text == cell
    browser.save_screenshot(str(tmp_path / "cell.png"))


def test_a_cited_passage_never_shows_a_document_the_caller_may_not_read(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site, "carl")
    locator = quote("section=Investigation of the Osaka warehouse complaint")
    browser.get(f"{site.url}/documents/files:osaka.md?locator={locator}#passage")
    hidden = (browser.title, main_text(browser), browser.page_source)
    browser.get(f"{site.url}/documents/files:no-such-document.md?locator={locator}#passage")
    absent = (browser.title, main_text(browser), browser.page_source)
    assert hidden == absent and "written warning" not in hidden[2]


# --------------------------------------------------------------------------- layout at phone and desktop widths


def emulate_width(driver: WebDriver, width: int, height: int) -> None:
    """Lay pages out as a device ``width`` CSS pixels wide (a phone at 390) would."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def geometry(driver: WebDriver) -> dict[str, Any]:
    """What the layout test asserts: the page's width against the viewport's, the boxes of
    the header and of Sign out, and each admin table's box against its scrolling container."""
    script = """
    const box = e => { const r = e.getBoundingClientRect();
      return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const signout = document.querySelector('form[action="/signout"] button');
    return {
      viewport: window.innerWidth,
      page: document.documentElement.scrollWidth,
      header: box(document.querySelector('header.top')),
      header_scroll: document.querySelector('header.top').scrollWidth,
      header_client: document.querySelector('header.top').clientWidth,
      signout: signout ? box(signout) : null,
      cut: [...document.querySelectorAll('header *, main *')]
        .filter(e => e.closest('.scroll') === null && e.getClientRects().length)
        .filter(e => { const r = e.getBoundingClientRect();
          return r.width > 0 && (r.right > window.innerWidth + 0.5 || r.left < -0.5); })
        .map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className),
      tables: [...document.querySelectorAll('.scroll')].map(s => ({
        id: s.querySelector('table').id, box: box(s),
        scroll: s.scrollWidth, client: s.clientWidth,
        overflow: getComputedStyle(s).overflowX })),
    };
    """
    return dict(driver.execute_script(script))


@pytest.mark.parametrize("width", [390, 1280])
def test_the_pages_fit_a_phone_and_a_desktop(
    browser: WebDriver, site: Site, tmp_path: Path, width: int
) -> None:
    sign_in(browser, site, "root")
    assert ask(browser, "Which class are flights under six hours booked in?") == "answered"
    emulate_width(browser, width, 844 if width < 600 else 900)
    try:
        for page in ("/", "/admin", "/documents/files:travel.md"):
            browser.get(f"{site.url}{page}")
            shot = tmp_path / f"{page.strip('/').split('/')[0] or 'ask'}-{width}.png"
            browser.save_screenshot(str(shot))
            seen = geometry(browser)
            assert seen["viewport"] == width, seen
            # The page itself never scrolls sideways, and nothing sticks out of it.
            assert seen["page"] <= width, (page, seen)
            assert seen["cut"] == [], (page, seen["cut"])
            # The header fits, with Sign out wholly on screen.
            assert seen["header_scroll"] <= seen["header_client"], (page, seen)
            signout = seen["signout"]
            assert signout is not None
            assert signout["left"] >= 0 and signout["right"] <= width, (page, signout)
            assert signout["top"] >= 0 and signout["bottom"] <= seen["header"]["bottom"], seen
            for table in seen["tables"]:
                assert table["box"]["right"] <= width and table["overflow"] == "auto", table
                if width >= 1280:
                    assert table["scroll"] <= table["client"], table  # cut off nothing
        browser.get(f"{site.url}/admin")
        traces = {t["id"]: t for t in geometry(browser)["tables"]}["traces"]
        if width < 600:
            # The request log is wider than a phone: its box scrolls, the page does not.
            assert traces["scroll"] > traces["client"], traces
            browser.execute_script(
                "document.querySelector('#traces').parentElement.scrollLeft = 10000"
            )
            left = browser.execute_script(
                "return document.querySelector('#traces').parentElement.scrollLeft"
            )
            assert left > 0 and browser.execute_script("return window.scrollX") == 0
            browser.save_screenshot(str(tmp_path / f"admin-scrolled-{width}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
