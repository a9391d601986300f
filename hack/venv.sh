# Sourced by the hack/ scripts: create .venv and install the project with its test extra when
# pyproject.toml changed since the last install. Sets VENV.
VENV="${VENV:-$PWD/.venv}"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
  echo "== installing kubevirt-expand-apiserver and its test tools into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e '.[test]'
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
