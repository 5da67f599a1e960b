"""Tables read back from extracted page text (`chatagent.tables`)."""

from __future__ import annotations

from chatagent.tables import clean, tables


def test_caption_header_and_rows_are_typed() -> None:
    text = "Intro.\n\n|Women's race — top 3|\n|Pos|Athlete|Time|\n|1|Ana Ribeiro|31:02|\n|2|Mia Lund|31:40|\n"
    (t,) = tables(text)
    assert t.caption == "Women's race — top 3"
    assert t.columns == ("Pos", "Athlete", "Time")
    assert t.rows == [("1", "Ana Ribeiro", "31:02"), ("2", "Mia Lund", "31:40")]
    assert t.render(1) == "Pos: 2; Athlete: Mia Lund; Time: 31:40"


def test_a_header_with_years_in_it_still_names_columns() -> None:
    text = "|School|2009|2010|2011|\n|Roosevelt High|612|640|655|\n|Lincoln High|700|710|722|\n"
    (t,) = tables(text)
    assert t.columns == ("School", "2009", "2010", "2011")
    assert t.render(0) == "School: Roosevelt High; 2009: 612; 2010: 640; 2011: 655"
    text = "|District|Pop. 1998|Pop. 2008|\n|Jamestown|1,200|1,050|\n|Half Tree Hollow|900|1,100|\n"
    assert tables(text)[0].columns == ("District", "Pop. 1998", "Pop. 2008")



def test_a_first_row_naming_some_columns_by_figures_is_still_the_header() -> None:
    text = (
        "|#|Episode|Rating|18-49|Viewers|\n|1|Goodbye City|1.7|1.0/3|2.37|\n|2|Pigs & Cows|1.5|1.0/3|2.11|\n"
        "|3|Wet 'n Wild|1.3|0.9/2|1.96|\n"
    )
    (t,) = tables(text)
    assert t.columns == ("#", "Episode", "Rating", "18-49", "Viewers")
    assert t.render(1) == "#: 2; Episode: Pigs & Cows; Rating: 1.5; 18-49: 1.0/3; Viewers: 2.11"
    # Further down a table, a row like it is data.
    (t,) = tables("|Name|Time|Wind|\n|Ana|20.6y|0.0|\n|Mia|20.5|1.2|\n|Ida|20.6y|0.0|\n")
    assert len(t.rows) == 3


def test_a_two_row_header_names_the_columns_under_a_spanning_cell() -> None:
    text = (
        "|Year|Single|Chart positions|Album|\n|US Country|US|\n|1957|Sittin' in the Balcony|—|38|single only|\n"
        "|1961|Language of Love|12|32|Language of Love|\n|1962|Thou Shalt Not Steal|—|73|singles only|\n"
    )
    (t,) = tables(text)
    assert t.columns == ("Year", "Single", "Chart positions US Country", "Chart positions US", "Album")
    assert len(t.rows) == 3
    assert t.render(1) == (
        "Year: 1961; Single: Language of Love; Chart positions US Country: 12; Chart positions US: 32; Album: Language of Love"
    )

def test_an_infobox_is_name_value_pairs_not_a_header() -> None:
    (t,) = tables("|Carlo Janka|\n|Born|15 October 1986|\n|Height|1.85 m|\n")
    assert t.columns == () and t.caption == "Carlo Janka"
    assert t.render(0) == "Born: 15 October 1986"


def test_a_row_short_of_cells_lost_them_to_a_cell_spanning_rows_above() -> None:
    text = "|Place|Player|Country|Score|\n|T5|Corey Pavin|United States|212|\n|Nick Price|Zimbabwe|212|\n|7|Ian Woosnam|Wales|213|\n"
    t = tables(text)[0]
    assert t.render(1) == "Player: Nick Price; Country: Zimbabwe; Score: 212"


def test_a_repeated_header_continues_the_table_and_left_out_rows_make_it_incomplete() -> None:
    text = "|Name|Team|Points|\n|A|X|1|\n\n[… 1,397 tokens less related to the question left out …]\n\n|Name|Team|Points|\n|B|Y|2|\n"
    (t,) = tables(text)
    assert [r[0] for r in t.rows] == ["A", "B"]
    assert not t.complete


def test_clean_removes_markdown_escapes_emphasis_links_and_tags() -> None:
    assert clean(r"A **resource** is *any* \[object\] see [docs](https://x.example) <b>now</b>\.") == (
        "A resource is any [object] see docs now."
    )
    # A link whose target holds parentheses, and tags the page shows as text (escaped).
    assert clean("[click me](javascript:alert(document.domain)) or [Foo](https://w.example/Foo_(bar)).") == (
        "click me or Foo."
    )
    assert clean(r"It prints \<script>alert(1)\</script> as text.") == "It prints <script>alert(1)</script> as text."


def test_a_two_row_header_with_its_cells_in_place_names_each_column_by_both_rows() -> None:
    # Extraction keeps the empty cells a span leaves: "Pinnacle height" spans "ft" and "m".
    text = "|Name|Pinnacle height||Year|\n||ft|m||\n|CN Tower|1,815|553|1976|\n|Ostankino|1,772|540||\n"
    (t,) = tables(text)
    assert t.columns == ("Name", "Pinnacle height ft", "Pinnacle height m", "Year")
    assert t.render(1) == "Name: Ostankino; Pinnacle height ft: 1,772; Pinnacle height m: 540"


def test_a_first_data_row_with_empty_cells_is_data_not_a_second_header_row() -> None:
    text = (
        "|Time|Wind|Auto|Athlete|Date|\n|20.6y|||Andy Stanfield|May 26, 1951|\n|20.6|0.0||Thane Baker|June 23, 1956|\n"
        "|20.5|0.0|20.75|Stone Johnson|July 2, 1960|\n|20.3|−0.6|20.45|Tommie Smith|October 16, 1968|\n"
    )
    (t,) = tables(text)
    assert t.columns == ("Time", "Wind", "Auto", "Athlete", "Date")
    assert t.render(0) == "Time: 20.6y; Athlete: Andy Stanfield; Date: May 26, 1951"


def test_a_row_of_text_with_its_figures_missing_is_data_not_a_header() -> None:
    text = (
        "|Name|Route|Length (mi)|Location|\n|Central Artery||3.18|Boston|\n|Commonwealth Avenue|||Newton, Boston|\n"
        "|East Boston Expressway||1.2|Boston|\n|Mohawk Trail|2|63.0|Greenfield|\n"
    )
    (t,) = tables(text)
    assert t.columns == ("Name", "Route", "Length (mi)", "Location")
    assert [r[0] for r in t.rows] == ["Central Artery", "Commonwealth Avenue", "East Boston Expressway", "Mohawk Trail"]


COINS = (
    "|Value|Diameter|Composition|1975–1979|1975–1979|1981-|1981-|\n"
    "|Value|Diameter|Composition|Obverse|Reverse|Obverse|Reverse|\n"
    "|1 seniti|18 mm|Bronze|Maize|Pig|Maize|Vanilla|\n|5 seniti|19 mm|Cupronickel|Chicken with chicks|Bananas|Chicken|Coconuts|\n"
)


def test_a_two_row_header_written_with_its_spans_repeated_names_each_column_by_both_rows() -> None:
    (t,) = tables(COINS)
    assert t.columns == ("Value", "Diameter", "Composition", "1975–1979 Obverse", "1975–1979 Reverse",
                         "1981- Obverse", "1981- Reverse")
    assert t.render(0).startswith("Value: 1 seniti; Diameter: 18 mm; Composition: Bronze; 1975–1979 Obverse: Maize")
    # The same when the upper row has no figures: "Total | Total" over "Apps | Goals".
    squad = "|No.|Player|Total|Total|Cup|Cup|\n|No.|Player|Apps|Goals|Apps|Goals|\n|9|Jamie Cureton|35|20|2|0|\n|10|Ben Gosling|12|1|1|0|\n"
    (t,) = tables(squad)
    assert t.columns == ("No.", "Player", "Total Apps", "Total Goals", "Cup Apps", "Cup Goals")
    assert len(t.rows) == 2
