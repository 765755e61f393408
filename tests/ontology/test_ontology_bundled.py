"""The bundled ontologies: they load, compile, and their anchors find what they are meant to find."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from odcf.ontology.loader import list_bundled, load_ontology
from odcf.plan.compiler import compile_file, compile_plan

REQUIRED = {
    "general", "legal_contract", "tender_rfp", "customer_service", "financial_risk",
    "medical_records", "zh_regulation", "agent_ops",
}
TAU = Path(__file__).resolve().parents[3] / "shared" / "data" / "agent_tau_bench"

#: Per ontology: a sample of domain text, and strings its anchors must match exactly
#: (whole matches, not just somewhere inside a longer match).
SAMPLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "general": (
        "On 2024-03-15T10:00:00Z we paid $1,200.50 (12.5%) for v2.3.1; see https://example.org/a?b=1 and "
        "mail ops@example.com. Ticket JIRA-1234, build 3f2a9c1, id 123e4567-e89b-12d3-a456-426614174000. "
        "Call get_user_details in src/odcf/cli/main.py, or `odcf plan`. Meeting March 15, 2024 at 10:30 am "
        "on 3/15/2024 (2024年3月15日), 40 kg, 5 USD, HttpClient and os.path.join().",
        ("$1,200.50", "12.5%", "2024-03-15T10:00:00Z", "v2.3.1", "https://example.org/a?b=1",
         "ops@example.com", "JIRA-1234", "3f2a9c1", "123e4567-e89b-12d3-a456-426614174000",
         "get_user_details", "src/odcf/cli/main.py", "`odcf plan`", "March 15, 2024", "10:30 am",
         "3/15/2024", "2024年3月15日", "40 kg", "5 USD", "HttpClient", "os.path.join()"),
    ),
    "legal_contract": (
        'Under Section 12.2(b) the Supplier shall pay USD 2,500,000 or 15% of the fees, whichever is lower, '
        'within thirty (30) days after March 1, 2025. "Confidential Information" survives for 5 years; see § 4.',
        ("Section 12.2(b)", "USD 2,500,000", "15%", "thirty (30) days", "March 1, 2025",
         '"Confidential Information"', "5 years", "§ 4", "the Supplier"),
    ),
    "tender_rfp": (
        "★ 3.2 Bidders must hold ISO 9001:2015. RFP No. RFP-2024/017, Item 4.1, requirement TR-12.3. "
        "Bid security: USD 50,000; 投标保证金人民币5万元. Deadline 2024-06-30 at 10:00 GMT "
        "(2024年6月30日 10时00分); price carries 40 points (10% of the ceiling), technical 60 分. Delivery within 90 calendar days; "
        "第三章 第十二条 （二）.",
        ("★ 3.2 Bidders must hold ISO 9001:2015", "ISO 9001:2015", "RFP No. RFP-2024/017", "Item 4.1",
         "TR-12.3", "USD 50,000", "人民币5万元", "2024-06-30", "10:00 GMT", "2024年6月30日", "10时00分",
         "40 points", "60 分", "90 calendar days", "第三章", "第十二条", "（二）"),
    ),
    "customer_service": (
        "Order #W2611340 (item 6469567736) was refunded $47.84 to gift_card_1725971 for james_li_5688; "
        "ticket TKT-20931, tracking 357962501027. Call +1 415-555-0134 or mail james.li@example.com "
        "before Mar 3, 2024; refunds take 5 business days (10% restocking fee). ZIP 10083. Booking M20IZO, flight HAT214.",
        ("M20IZO", "HAT214", "#W2611340", "6469567736", "$47.84", "gift_card_1725971", "james_li_5688", "TKT-20931",
         "357962501027", "+1 415-555-0134", "james.li@example.com", "Mar 3, 2024", "5 business days", "10%",
         "10083"),
    ),
    "financial_risk": (
        "In FY2023 the group lent HK$12.5 million and €3.2bn to a related party; net leverage 3.5x against a "
        "4.0x covenant (ICR 2.1 : 1); spread +150 bps; 关联交易金额人民币1.5亿元. Rated BBB- by S&P, Baa3 by "
        "Moody's, under IFRS 9 and ASC 842; 5,000,000 USD due 30 June 2025; bond XS1234567890.",
        ("FY2023", "HK$12.5 million", "€3.2bn", "3.5x", "4.0x", "2.1 : 1", "+150 bps", "人民币1.5亿元",
         "BBB-", "Baa3", "IFRS 9", "ASC 842", "5,000,000 USD", "30 June 2025", "XS1234567890"),
    ),
    "medical_records": (
        "Dx: E11.22 type 2 diabetes with diabetic kidney disease, N18.3 chronic kidney disease stage 3a. "
        "Metformin 500 mg 2x daily, lisinopril 10 mg q.d., insulin 12 units at night. eGFR 48 mL/min/1.73m2, "
        "HbA1c 7.9%, potassium 5.1 mmol/L on 2024-02-10. BP 142/88 mmHg, weight 81 kg. KDIGO G3aA2. "
        "Repeat labs every 3 months.",
        ("E11.22", "N18.3", "stage 3a", "500 mg", "2x daily", "10 mg", "q.d.", "12 units",
         "eGFR 48 mL/min/1.73m2", "HbA1c 7.9%", "potassium 5.1 mmol/L", "2024-02-10", "142/88 mmHg", "81 kg",
         "G3aA2", "every 3 months"),
    ),
    "zh_regulation": (
        "依据《中华人民共和国网络安全法》第3.2.1条及第十二条第二款，网络运营者应当在30日内整改；"
        "逾期不改正的，处¥1,200.00以上、人民币12万元以下罚款，情节严重的处1.5亿元或者违法所得五倍以下罚款。"
        "本办法自2024年3月15日起施行（国发〔2024〕12号），抽检比例不低于15%，标准见GB/T 22239-2019，（三）项。",
        ("《中华人民共和国网络安全法》", "第3.2.1条", "第十二条第二款", "30日内", "¥1,200.00", "人民币12万元",
         "1.5亿元", "五倍以下", "2024年3月15日", "国发〔2024〕12号", "15%", "GB/T 22239-2019", "（三）"),
    ),
    "agent_ops": (
        'user mia_li_3668 asked to cancel reservation 4WQ150 on flight HAT123 (JFK to SEA, 2024-05-20); '
        'order #W1234567 item 6469567736, refund {"amount": 536.65} $536.65 to credit_card_4421486. '
        'Tool get_reservation_details failed: KeyError at /srv/app/tools.py (exit code 1, HTTP 404), '
        'request 123e4567-e89b-12d3-a456-426614174000.',
        ("mia_li_3668", "4WQ150", "HAT123", "JFK", "SEA", "2024-05-20", "#W1234567", "6469567736",
         '"amount": 536.65', "$536.65", "credit_card_4421486", "get_reservation_details", "KeyError",
         "/srv/app/tools.py", "exit code 1", "HTTP 404", "123e4567-e89b-12d3-a456-426614174000"),
    ),
}


def test_every_required_domain_is_bundled_with_a_description():
    bundled = dict(list_bundled())
    assert REQUIRED <= set(bundled)
    assert all(bundled[name].strip() for name in REQUIRED)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_bundled_ontology_loads_and_compiles(name: str):
    ont = load_ontology(name)
    plan = compile_plan(ont)
    assert plan.concepts and plan.protection.anchors and plan.protection.markers
    assert plan.protection.terms or name == "general"  # general-purpose: no domain terms
    assert len(plan.queries) == len(ont.concepts) + (1 if ont.task else 0)
    assert plan.queries[-1].name == "task" and plan.task_goal
    for role in plan.roles.values():
        assert role.budget > 0
        assert not set(role.required) & set(role.forbidden)
    assert plan.state_schema["additionalProperties"] is False
    assert compile_file(name).hash == plan.hash


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_anchor_matches_its_domain_sample(name: str):
    plan = compile_file(name)
    text, expected = SAMPLES[name]
    found: dict[str, set[str]] = {}
    for anchor in plan.protection.anchors:
        found[anchor.name] = {m.group() for m in anchor.regex.finditer(text)}
    silent = sorted(n for n, hits in found.items() if not hits)
    assert not silent, f"anchors of {name} that match nothing in the sample: {silent}"
    every = set().union(*found.values())
    missing = [s for s in expected if s not in every]
    assert not missing, f"{name}: not matched as a whole: {missing}"


def test_no_anchor_keeps_a_trailing_comma_or_period():
    plan = compile_file("general")
    money = next(a for a in plan.protection.anchors if a.name == "money")
    assert [m.group() for m in money.regex.finditer("costs $100, then $1,000. ")] == ["$100", "$1,000"]


def test_medical_terms_keep_dkd_and_ckd_distinct():
    plan = compile_file("medical_records")
    terms = plan.protection.terms
    assert "diabetic kidney disease" in terms and "chronic kidney disease" in terms
    assert plan.abbreviations["DKD"] != plan.abbreviations["CKD"]


def test_zh_regulation_is_chinese():
    plan = compile_file("zh_regulation")
    assert plan.language == "zh"
    assert "不得" in plan.protection.connectives and "除非" in plan.protection.connectives
    assert plan.queries[0].text.startswith("scope：适用范围")


@pytest.mark.skipif(not TAU.is_dir(), reason="shared tau-bench data not present")
def test_agent_ops_anchors_find_ids_in_real_tau_bench_traffic():
    plan = compile_file("agent_ops")
    trajectories = json.loads((TAU / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    text = "\n".join(str(m.get("content")) for t in trajectories[:20] for m in t["traj"])
    counts = {a.name: sum(1 for _ in a.regex.finditer(text)) for a in plan.protection.anchors}
    for name in ("user_id", "payment_method_id", "flight_number", "reservation_id", "money", "datetime"):
        assert counts[name] > 0, f"{name} found nothing in tau-bench airline trajectories"


@pytest.mark.skipif(not TAU.is_dir(), reason="shared tau-bench data not present")
def test_agent_ops_anchors_match_every_id_in_the_tau_bench_tables():
    plan = compile_file("agent_ops")
    rx = {a.name: a.regex for a in plan.protection.anchors}
    orders = json.loads((TAU / "retail_orders.json").read_text(encoding="utf-8"))
    flights = json.loads((TAU / "airline_flights.json").read_text(encoding="utf-8"))
    payments = {p["payment_method_id"] for o in orders.values() for p in o["payment_history"]}
    items = {i["item_id"] for o in orders.values() for i in o["items"]}
    checks = {
        "order_id": set(orders),
        "user_id": {o["user_id"] for o in orders.values()},
        "payment_method_id": payments,
        "long_numeric_id": items,
        "flight_number": set(flights),
    }
    for name, ids in checks.items():
        missed = sorted(i for i in ids if not rx[name].fullmatch(i))
        assert not missed, f"{name} misses {len(missed)} of {len(ids)} ids, e.g. {missed[:3]}"


def test_bundled_domain_equals_its_file_name():
    # a delivery record names the domain; replay and re-verification load the plan back by that name
    for name, _ in list_bundled():
        assert load_ontology(name).domain == name


@pytest.mark.parametrize("text, expected", [
    ("Take apixaban 5 mg twice daily", ["5 mg"]),
    ("250 mcg, 100 µg or 100 μg", ["250 mcg", "100 µg", "100 μg"]),
    ("5 mL of 0.9% saline in 2 L, 3 dL, 7 mmol/L, 10 IU", ["5 mL", "0.9%", "2 L", "3 dL", "7 mmol", "10 IU"]),
    ("5 kWh from 4 kW (2 MW peak) at 50 Hz, 3.5 GHz, 800 kHz, 96 MHz",
     ["5 kWh", "4 kW", "2 MW", "50 Hz", "3.5 GHz", "800 kHz", "96 MHz"]),
    ("12 lbs, 1 lb, 16 oz at 60 mph", ["12 lbs", "1 lb", "16 oz", "60 mph"]),
    ("20 °C, 68°F, 30 ℃ and 40 %", ["20 °C", "68°F", "30 ℃", "40 %"]),
    ("20\u00a0°C and 5\u202fmg", ["20\u00a0°C", "5\u202fmg"]),  # a no-break space before the unit
    # the unit must end there: no unit out of "in", "mins", "Lakes" or the "m" of "mètres"
    ("put 5 in the box for 5 mins near 2 Lakes, 5 mètres", ["5", "5", "2", "5"]),
    ("40 kg, 10 km, 5 min, 8 GB, 2 h", ["40 kg", "10 km", "5 min", "8 GB", "2 h"]),
])
def test_general_number_keeps_its_unit(text: str, expected: list[str]):
    number = next(a for a in compile_file("general").protection.anchors if a.name == "number")
    assert [m.group() for m in number.regex.finditer(text)] == expected


@pytest.mark.parametrize("name", ["general", "financial_risk"])
def test_a_negative_figure_keeps_its_minus_sign_whatever_the_dash(name: str):
    # "−12 °C" and "−$2.5 million" (U+2212, as typeset reports and PDFs write it) were protected as "12 °C" and
    # "$2.5 million": verify then found the value in an output that had lost its sign, and said nothing
    anchors = {a.name: a.regex for a in compile_file(name).protection.anchors}
    text = "Margin \u22123.2%, cash flow \u2212$2.5 million and -$40, range $5-$10."
    found = {m.group() for a in ("percentage", "money", "money_prefix") if a in anchors for m in anchors[a].finditer(text)}
    assert {"\u22123.2%", "\u2212$2.5 million", "-$40", "$5", "$10"} <= found, found
    assert "-$10" not in found  # the hyphen of a range is no sign
    if "number" in anchors:
        assert [m.group() for m in anchors["number"].finditer("fell to \u221212 °C, then -4 °C")] == [
            "\u221212 °C", "-4 °C"]


def test_medical_measurements_keep_sizes_and_weights():
    anchors = {a.name: a.regex for a in compile_file("medical_records").protection.anchors}
    found = {m.group() for name in ("drug_dose", "measurement") for m in anchors[name].finditer(
        "Lesion 12 mm, weight 180 lbs, temperature 38.5\u00a0°C, apixaban 5\u00a0mg.")}
    assert {"12 mm", "180 lbs", "38.5\u00a0°C", "5\u00a0mg"} <= found


def test_a_date_is_not_read_as_a_blood_pressure():
    # QA: "Admitted 03/02/2024" was protected as blood_pressure "03/02" (and "12/05/24" as "05/24")
    bp = {a.name: a.regex for a in compile_file("medical_records").protection.anchors}["blood_pressure"]
    text = "Admitted 03/02/2024, seen 12/05/24; BP 128/82 mmHg, then BP:140/90."
    assert [m.group() for m in bp.finditer(text)] == ["128/82 mmHg", "140/90"]


def test_a_numeric_id_with_a_suffix_is_protected_whole():
    # QA of this stop: after the whole-id change, "1002394857-01" and tracking "940011189922385-1" were not
    # protected at all (the numeric id anchors refused a match followed by "-digits")
    anchors = {a.name: a.regex for a in compile_file("customer_service").protection.anchors}
    text = "Item 1002394857-01 shipped as 940011189922385-1; item 1002394857 is back-ordered."
    found = {m.group() for rx in anchors.values() for m in rx.finditer(text)}
    assert {"1002394857-01", "940011189922385-1", "1002394857"} <= found
    ops = {a.name: a.regex for a in compile_file("agent_ops").protection.anchors}["long_numeric_id"]
    assert [m.group() for m in ops.finditer("order 12345678901-2 and 12345678901")] == ["12345678901-2", "12345678901"]


def test_a_booking_reference_is_an_identifier_and_a_word_in_capitals_is_not():
    # a tau-bench reservation id, "the reservation ID (which you provided as M20IZO)", was protected only by the
    # condition "provided" read into the verb; once that verb guarded nothing, nothing protected the id
    rx = {a.name: a.regex for a in compile_file("customer_service").protection.anchors}["booking_reference"]
    found = [m.group() for m in rx.finditer("Reservation M20IZO / NQNU5R on HAT214: REFUND 12345 A1234 MP3 done.")]
    assert found == ["M20IZO", "NQNU5R", "HAT214"]
