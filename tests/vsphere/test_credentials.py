"""Credential sources and their precedence: arguments > environment > config file > prompt."""

from __future__ import annotations

import os

import pytest

from esxdiag.collectors.credentials import CredentialsError, resolve_credentials

NO_TTY = lambda: False  # noqa: E731


def _config(tmp_path, body: str, mode: int = 0o600):
    path = tmp_path / "config.ini"
    path.write_text(body)
    os.chmod(path, mode)
    return path


def _never_prompt(text: str) -> str:
    raise AssertionError(f"unexpected prompt: {text}")


def test_explicit_arguments_win_over_environment_and_config(tmp_path):
    cfg = _config(tmp_path, "[vcenter]\nurl = cfg.example\nusername = cfg-user\npassword = cfg-pw\n")
    env = {"ESXDIAG_VCENTER": "env.example", "ESXDIAG_USERNAME": "env-user", "GOVC_URL": "govc.example"}
    creds = resolve_credentials("arg.example:9443", "arg-user", env=env, config_path=cfg, stdin_isatty=NO_TTY)
    assert (creds.url, creds.username, creds.password) == ("https://arg.example:9443/sdk", "arg-user", "cfg-pw")
    assert (creds.host, creds.port) == ("arg.example", 9443)


def test_govc_url_userinfo_is_stripped_and_used():
    creds = resolve_credentials(env={"GOVC_URL": "https://admin%40vsphere.local:p%3Ass@vc.example/sdk"},
                                config_path=os.devnull, stdin_isatty=NO_TTY)
    assert creds.url == "https://vc.example/sdk"
    assert creds.username == "admin@vsphere.local"
    assert creds.password == "p:ss"


def test_govc_bare_host_url_gets_scheme_and_sdk_path():
    creds = resolve_credentials(env={"GOVC_URL": "user:pw@10.0.0.5", "GOVC_INSECURE": "1"},
                                config_path=os.devnull, stdin_isatty=NO_TTY)
    assert creds.url == "https://10.0.0.5/sdk"
    assert creds.insecure is True


def test_esxdiag_environment_wins_over_govc_environment():
    env = {"ESXDIAG_VCENTER": "https://a.example/sdk", "ESXDIAG_USERNAME": "a", "ESXDIAG_PASSWORD": "pa",
           "ESXDIAG_INSECURE": "false", "GOVC_URL": "https://b:pb@b.example/sdk", "GOVC_INSECURE": "true",
           "GOVC_USERNAME": "b2", "GOVC_PASSWORD": "pb2"}
    creds = resolve_credentials(env=env, config_path=os.devnull, stdin_isatty=NO_TTY)
    assert (creds.url, creds.username, creds.password, creds.insecure) == ("https://a.example/sdk", "a", "pa", False)


def test_govc_username_password_override_the_url_userinfo():
    env = {"GOVC_URL": "https://u1:p1@vc.example/sdk", "GOVC_USERNAME": "u2", "GOVC_PASSWORD": "p2"}
    creds = resolve_credentials(env=env, config_path=os.devnull, stdin_isatty=NO_TTY)
    assert (creds.username, creds.password) == ("u2", "p2")


def test_config_file_supplies_every_field(tmp_path):
    thumb = "AB:" * 19 + "AB"
    cfg = _config(tmp_path, f"[vcenter]\nurl = https://vc.example/sdk\nusername = u\npassword = p%w\n"
                            f"insecure = yes\nthumbprint = {thumb}\n")
    creds = resolve_credentials(env={}, config_path=cfg, stdin_isatty=NO_TTY)
    assert (creds.url, creds.username, creds.password, creds.insecure) == ("https://vc.example/sdk", "u", "p%w", True)
    assert creds.thumbprint == "ab" * 20


def test_config_with_password_readable_by_group_is_refused(tmp_path):
    cfg = _config(tmp_path, "[vcenter]\nurl = vc.example\nusername = u\npassword = p\n", mode=0o640)
    with pytest.raises(CredentialsError, match=r"chmod 600"):
        resolve_credentials(env={}, config_path=cfg, stdin_isatty=NO_TTY)


def test_config_without_password_may_be_world_readable(tmp_path):
    cfg = _config(tmp_path, "[vcenter]\nurl = vc.example\nusername = u\n", mode=0o644)
    creds = resolve_credentials(env={"ESXDIAG_PASSWORD": "p"}, config_path=cfg, stdin_isatty=NO_TTY)
    assert (creds.username, creds.password) == ("u", "p")


def test_prompt_only_on_a_tty():
    asked = []

    def prompt(text: str) -> str:
        asked.append(text)
        return "typed"

    env = {"ESXDIAG_VCENTER": "vc.example", "ESXDIAG_USERNAME": "u"}
    creds = resolve_credentials(env=env, config_path=os.devnull, prompt=prompt, stdin_isatty=lambda: True)
    assert creds.password == "typed" and asked == ["Password for u at vc.example: "]
    with pytest.raises(CredentialsError, match="not a terminal"):
        resolve_credentials(env=env, config_path=os.devnull, prompt=_never_prompt, stdin_isatty=NO_TTY)


def test_password_in_url_argument_is_refused():
    with pytest.raises(CredentialsError, match="password inside the URL argument"):
        resolve_credentials("https://u:secret@vc.example/sdk", env={}, config_path=os.devnull)


def test_repr_and_str_never_show_the_password():
    creds = resolve_credentials(env={"GOVC_URL": "https://u:s3cr3t-value@vc.example/sdk"},
                                config_path=os.devnull, stdin_isatty=NO_TTY)
    assert "s3cr3t-value" not in repr(creds) and "s3cr3t-value" not in str(creds)
    assert "u" == creds.username


@pytest.mark.parametrize("env, why", [
    ({}, "no vCenter URL"),
    ({"ESXDIAG_VCENTER": "vc.example"}, "no user name"),
    ({"ESXDIAG_VCENTER": "ftp://vc.example", "ESXDIAG_USERNAME": "u", "ESXDIAG_PASSWORD": "p"}, "not a vCenter URL"),
    ({"GOVC_URL": "u:p@vc.example", "GOVC_INSECURE": "maybe"}, "insecure must be true/false"),
    ({"GOVC_URL": "u:p@vc.example", "ESXDIAG_THUMBPRINT": "abc"}, "SHA-1 or SHA-256"),
])
def test_unusable_input_is_a_clear_error(env, why):
    with pytest.raises(CredentialsError, match=why):
        resolve_credentials(env=env, config_path=os.devnull, prompt=_never_prompt, stdin_isatty=NO_TTY)


def test_explicit_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(CredentialsError, match="does not exist"):
        resolve_credentials(env={}, config_path=tmp_path / "nope.ini")


def test_a_vcenter_host_section_applies_to_that_vcenter_only(tmp_path):
    cfg = _config(tmp_path, "[vcenter]\nusername = everyone\npassword = shared\n"
                            "[vcenter vc2.example]\nusername = ops@other.local\npassword = own\n"
                            f"thumbprint = {'ab' * 32}\n"
                            "[vcenter VC3.example:8443]\ninsecure = yes\n")
    env = {"ESXDIAG_PASSWORD": "from-env"}
    one = resolve_credentials("vc1.example", env=env, config_path=cfg, stdin_isatty=NO_TTY)
    two = resolve_credentials("https://vc2.example/sdk", env=env, config_path=cfg, stdin_isatty=NO_TTY)
    three = resolve_credentials("vc3.example:8443", env=env, config_path=cfg, stdin_isatty=NO_TTY)
    other_port = resolve_credentials("vc3.example", env=env, config_path=cfg, stdin_isatty=NO_TTY)
    assert (one.username, one.password, one.thumbprint) == ("everyone", "from-env", None)
    assert (two.username, two.password, two.thumbprint) == ("ops@other.local", "own", "ab" * 32)
    assert (three.password, three.insecure, other_port.insecure) == ("from-env", True, False)
    # explicit arguments still win over the section
    assert resolve_credentials("vc2.example", "arg-user", env=env, config_path=cfg, stdin_isatty=NO_TTY,
                               thumbprint="cd" * 20).username == "arg-user"


def test_a_password_in_a_host_section_needs_a_private_file(tmp_path):
    cfg = _config(tmp_path, "[vcenter vc2.example]\nusername = u\npassword = p\n", mode=0o644)
    with pytest.raises(CredentialsError, match="chmod 600"):
        resolve_credentials("vc2.example", config_path=cfg, stdin_isatty=NO_TTY)


def test_a_url_inside_a_host_section_is_refused(tmp_path):
    cfg = _config(tmp_path, "[vcenter vc2.example]\nurl = vc9.example\n")
    with pytest.raises(CredentialsError, match=r"\[vcenter vc2.example\] names its vCenter"):
        resolve_credentials("vc2.example", "u", env={"ESXDIAG_PASSWORD": "p"}, config_path=cfg, stdin_isatty=NO_TTY)
