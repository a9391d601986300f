"""Access credential rules (``vmi-create-admitter.go``: ``validateAccessCredentials``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission._go import Causes, has, invalid, items, obj


def validate_access_credentials(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateAccessCredentials``: ``field`` is ``<spec>.accessCredentials``."""
    volumes = items(spec, "volumes")
    no_cloud = any(has(v, "cloudInitNoCloud") for v in volumes)
    config_drive = any(has(v, "cloudInitConfigDrive") for v in volumes)
    causes: Causes = []
    for idx, cred in enumerate(items(spec, "accessCredentials")):
        at = f"{field}[{idx}]"
        count = 0
        ssh = obj(cred, "sshPublicKey")
        if ssh is not None:
            count += 1
            methods = 0
            sources = 1 if obj(ssh, "source", "secret") is not None else 0
            method = obj(ssh, "propagationMethod") or {}
            if has(method, "noCloud"):
                methods += 1
                if not no_cloud:
                    causes.append(
                        invalid(
                            f"{at}.sshPublicKey.propagationMethod",
                            f"{at} requires a noCloud volume to exist when the noCloud propagationMethod is in use.",
                        )
                    )
            if has(method, "configDrive"):
                methods += 1
                if not config_drive:
                    causes.append(
                        invalid(
                            f"{at}.sshPublicKey.propagationMethod",
                            f"{at} requires a configDrive volume to exist when the configDrive propagationMethod is in use.",
                        )
                    )
            if has(method, "qemuGuestAgent"):
                if not method["qemuGuestAgent"].get("users"):
                    causes.append(
                        invalid(
                            f"{at}.sshPublicKey.propagationMethod.qemuGuestAgent.users",
                            f"{at} requires at least one user to be present in the users list",
                        )
                    )
                methods += 1
            if sources != 1:
                causes.append(invalid(f"{at}.sshPublicKey.source", f"{at} must have exactly one source set"))
            if methods != 1:
                causes.append(
                    invalid(
                        f"{at}.sshPublicKey.propagationMethod",
                        f"{at} must have exactly one propagationMethod set",
                    )
                )
        password = obj(cred, "userPassword")
        if password is not None:
            count += 1
            sources = 1 if obj(password, "source", "secret") is not None else 0
            methods = 1 if obj(password, "propagationMethod", "qemuGuestAgent") is not None else 0
            if sources != 1:
                causes.append(invalid(f"{at}.userPassword.source", f"{at} must have exactly one source set"))
            if methods != 1:
                causes.append(
                    invalid(
                        f"{at}.userPassword.propagationMethod",
                        f"{at} must have exactly one propagationMethod set",
                    )
                )
        if count != 1:
            causes.append(invalid(at, f"{at} must have exactly one access credential type set"))
    return causes
