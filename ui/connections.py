"""Saved connections: host, port, database, user, SSL mode. Passwords stay in memory only."""

from __future__ import annotations

from psycopg.conninfo import make_conninfo
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.preview import inspect_database
from ui.wheel_guard import guard_wheel
from ui.worker import Job


class ConnectionDialog(QDialog):
    """Edit one saved connection; "Test" connects in the background and reports."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connection")
        form = QFormLayout()
        self.name = QLineEdit()
        self.host = QLineEdit("localhost")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(5432)
        self.database = QLineEdit("postgres")
        self.user = QLineEdit()
        self.sslmode = QComboBox()
        self.sslmode.addItems(["prefer", "disable", "require", "verify-ca", "verify-full"])
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("optional: kept in memory for this session only")
        for label, w in (("Name", self.name), ("Host", self.host), ("Port", self.port), ("Database", self.database),
                         ("User", self.user), ("SSL mode", self.sslmode), ("Password", self.password)):
            form.addRow(label, w)
        self.status = QLabel("Passwords are never saved; libpq's PGPASSWORD and ~/.pgpass also work.")
        self.status.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.test_btn = buttons.addButton("Test", QDialogButtonBox.ButtonRole.ActionRole)
        self.test_btn.clicked.connect(self._on_test_clicked)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.status)
        lay.addWidget(buttons)
        self._job: Job | None = None
        guard_wheel(self)

    def dsn(self, with_password: bool = False) -> str:
        params = {
            "host": self.host.text().strip(), "port": str(self.port.value()), "dbname": self.database.text().strip(),
            "user": self.user.text().strip(), "sslmode": self.sslmode.currentText(),
        }
        if with_password and self.password.text():
            params["password"] = self.password.text()
        return make_conninfo("", **{k: v for k, v in params.items() if v})

    def _on_test_clicked(self) -> None:
        dsn = self.dsn(with_password=True)
        self.status.setText("connecting…")
        self._job = Job(lambda *_a: inspect_database(dsn))
        self._job.signals.finished.connect(lambda info: self.status.setText(f"OK: PostgreSQL {info.version}"))
        self._job.signals.failed.connect(lambda msg: self.status.setText(msg))
        self._job.start()
