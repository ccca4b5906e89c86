"""Consent is the user's: a destructive tool goes ahead when the user accepts through elicitation, and takes
the model's confirm=true only where the operator chose --trust-model-confirmation."""

from __future__ import annotations

from tests.harness import open_session
from tests.shared.toy_server import entry


def toy(*argv: str):
    return entry.build(entry.parser(with_runner=False).parse_args(["--toolsets", "all", *argv]))


def accept(message: str) -> dict:
    assert "Forget the word 'beta'?" in message
    return {"confirm": True}


async def test_the_user_accepting_through_elicitation_lets_the_action_happen(era):
    async with open_session(toy(), era=era, elicit=accept) as session:
        outcome = await session.call_ok("forget", {"name": "beta"})
        assert "beta" not in outcome.text
        assert "beta" in await session.call_error("word", {"name": "beta"})


async def test_the_user_declining_changes_nothing(era):
    async with open_session(toy(), era=era, elicit=lambda message: None) as session:
        text = await session.call_error("forget", {"name": "beta"})
        assert "Error (permission_denied): The user declined forgetting 'beta'; nothing was changed." in text
        await session.call_ok("word", {"name": "beta"})


async def test_unchecking_the_box_is_declining(era):
    async with open_session(toy(), era=era, elicit=lambda message: {"confirm": False}) as session:
        assert "declined" in await session.call_error("forget", {"name": "beta"})
        await session.call_ok("word", {"name": "beta"})


async def test_confirm_true_from_the_model_is_not_consent_by_default(era):
    # No elicitation handler: the client cannot ask the user.
    async with open_session(toy(), era=era) as session:
        text = await session.call_error("forget", {"name": "beta", "confirm": True})
        assert "cannot ask the user" in text and "--trust-model-confirmation" in text
        await session.call_ok("word", {"name": "beta"})


async def test_confirm_true_does_not_skip_asking_a_user_who_can_be_asked(era):
    async with open_session(toy(), era=era, elicit=lambda message: None) as session:
        assert "declined" in await session.call_error("forget", {"name": "beta", "confirm": True})


async def test_with_the_operators_flag_confirm_true_stands_for_consent(era):
    async with open_session(toy("--trust-model-confirmation"), era=era) as session:
        text = await session.call_error("forget", {"name": "beta"})
        assert "call again with confirm=true" in text
        outcome = await session.call_ok("forget", {"name": "beta", "confirm": True})
        assert "beta" not in outcome.text
