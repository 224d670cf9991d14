"""Countries by any of their names: tables and questions name the same country differently.

A World Bank table has a row ``United States``; a file is called ``us-gdp-annual.csv``; a
question asks about "the UK", "米国" or "中国". :func:`country_of` recognises a country by its
ISO 3166 name, common or official name, its alpha-3 code or a customary English short form
(``US``, ``U.S.``, ``UK``, ``Britain``), and :func:`country_names` lists the names a question
may use for it, the Japanese and Chinese ones included (the translations ``pycountry``
ships; nothing is downloaded).

Two-letter codes other than the customary ``US`` and ``UK`` are never read as a country:
``IT``, ``IS``, ``NO`` and ``ID`` are words and department names far more often than Italy,
Iceland, Norway or Indonesia. Codes are matched as written (upper case), names whatever
their case.
"""

from __future__ import annotations

import functools
import gettext
from typing import Any

__all__ = ["country_name", "country_names", "country_of"]

# English short forms ISO 3166 does not list, by alpha-2 code.
_CUSTOMARY = {
    "US": ("US", "U.S.", "U.S.A.", "USA", "America", "United States of America"),
    "GB": ("UK", "U.K.", "Britain", "Great Britain"),
}
# The languages whose names of a country a question may use, besides English.
_LANGUAGES = ("ja", "zh_CN", "zh_TW")


@functools.cache
def _index() -> tuple[dict[str, Any], dict[str, Any]]:
    """Countries by casefolded name, and by code as written."""
    import pycountry  # loaded when a table or question first names something

    by_name: dict[str, Any] = {}
    by_code: dict[str, Any] = {}
    for country in pycountry.countries:
        for name in _iso_names(country):
            by_name.setdefault(name.casefold(), country)
        by_code[country.alpha_3] = country
    for alpha_2, names in _CUSTOMARY.items():
        customary = pycountry.countries.get(alpha_2=alpha_2)
        for name in names:
            if name.isalpha() and name.isupper():
                by_code[name] = customary
            else:
                by_name[name.casefold()] = customary
    return by_name, by_code


def _iso_names(country: Any) -> list[str]:
    names = [getattr(country, key, None) for key in ("common_name", "name", "official_name")]
    return [n for n in names if n]


def country_of(name: str) -> Any | None:
    """The ``pycountry`` country ``name`` names, or ``None``."""
    text = " ".join(name.split())
    if not text:
        return None
    by_name, by_code = _index()
    if text.isalpha() and text.isupper() and len(text) <= 3:
        return by_code.get(text)
    return by_name.get(text.casefold())


def country_name(name: str) -> str | None:
    """The name a country is known by (``US`` → ``United States``), or ``None``."""
    country = country_of(name)
    return None if country is None else _iso_names(country)[0]


@functools.cache
def _translations() -> tuple[gettext.NullTranslations, ...]:
    import pycountry

    return tuple(
        gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[lang], fallback=True)
        for lang in _LANGUAGES
    )


@functools.lru_cache(maxsize=1024)
def country_names(name: str) -> tuple[str, ...]:
    """Every other name of the country ``name`` names, ``()`` if it names none: its ISO
    name and common name, alpha-3 code, customary short forms, and the Japanese and
    Chinese names of those."""
    country = country_of(name)
    if country is None:
        return ()
    # Official names are recognised, never offered: "Federal Republic of Germany" would
    # make "federal" and "republic" words of a name in every question.
    short = [n for n in _iso_names(country) if n != getattr(country, "official_name", None)]
    names = [*short, country.alpha_3, *_CUSTOMARY.get(country.alpha_2, ())]
    for translation in _translations():
        names.extend(translation.gettext(n) for n in short)
    own = " ".join(name.split()).casefold()
    return tuple(dict.fromkeys(n for n in names if n.casefold() != own))
