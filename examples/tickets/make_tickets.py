#!/usr/bin/env python3
"""make_tickets.py: writes ../tickets.jsonl, N synthetic support tickets (default 300)
for `typellm batch` (README "Decide over a file"). Deterministic (seeded): the same
file every run. Every context starts with one shared instruction block, so the
prefix cache computes it once for the whole file.

    python3 examples/tickets/make_tickets.py [N] > examples/tickets.jsonl
"""
import json
import random
import sys

INSTRUCTIONS = (
    "Acme Cloud support desk. Read the customer ticket below and triage it: which product "
    "area it concerns, how urgent it is, whether the customer is blocked, and who should "
    "pick it up.\n\n"
)
AREAS = {
    "billing": ["I was charged twice for the {plan} plan this month",
                "my invoice for {month} shows a seat count of {n} but we only have {m} users",
                "the card on file was declined although it is valid until {year}"],
    "login": ["nobody on my team can sign in since {time}, the page says 'session expired'",
              "two-factor codes arrive {n} minutes late so the login times out",
              "SSO through our identity provider returns error {code}"],
    "storage": ["uploads larger than {n} MB fail at {pct}% with a network error",
                "a bucket I deleted on {month} {day} still counts against my quota",
                "downloads from the {region} region are very slow, about {n} KB/s"],
    "api": ["the /v2/orders endpoint returns HTTP {code} for about {pct}% of requests",
            "rate limits kick in at {n} requests per minute instead of the documented {m}",
            "webhooks stopped arriving after we rotated the signing secret on {month} {day}"],
}
TONES = ["", "This is urgent, our launch is tomorrow. ", "No rush, just letting you know. ",
         "We have a workaround for now. ", "Production is down for all our customers! "]
NAMES = ["Ana", "Bo", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lina"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August"]


def ticket(rng, i):
    area = rng.choice(sorted(AREAS))
    text = rng.choice(AREAS[area]).format(
        plan=rng.choice(["Team", "Business", "Starter"]), month=rng.choice(MONTHS), n=rng.randint(2, 900),
        m=rng.randint(2, 90), year=rng.randint(2027, 2031), time=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC",
        code=rng.choice([401, 403, 429, 500, 502, 503]), pct=rng.randint(1, 99), day=rng.randint(1, 28),
        region=rng.choice(["eu-west", "us-east", "ap-south"]))
    body = f"{rng.choice(TONES)}Hi, {text}. Thanks, {rng.choice(NAMES)}"
    return {"id": f"T-{1000 + i}", "context": f"{INSTRUCTIONS}Ticket T-{1000 + i}: {body}"}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = random.Random(30)
    for i in range(n):
        print(json.dumps(ticket(rng, i)))


if __name__ == "__main__":
    main()
