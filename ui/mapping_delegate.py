"""Editors of the mapping table: pick-lists that still take free text."""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from core.pgtypes import COMMON_TYPES
from core.value_formats import EXAMPLES
from ui.table_models import MappingModel

Index = QModelIndex | QPersistentModelIndex


class MappingDelegate(QStyledItemDelegate):
    """Target type: PostgreSQL types; format: examples; target column onto an existing table: its columns."""

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: Index) -> QWidget:  # noqa: N802
        model = index.model()
        col = index.column()
        if col == MappingModel.TYPE:
            choices = list(COMMON_TYPES)
        elif col == MappingModel.FORMAT:
            choices = ["", *EXAMPLES]  # empty: the values load as written
        elif col == MappingModel.TARGET and isinstance(model, MappingModel) and model.table_columns is not None:
            choices = list(model.table_columns)
        else:
            return super().createEditor(parent, option, index)
        combo = QComboBox(parent)
        combo.setEditable(True)  # any other type name (varchar(20), numeric(12,2), an enum) can be typed
        combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        combo.addItems(choices)
        combo.setMaxVisibleItems(20)
        return combo

    def setEditorData(self, editor: QWidget, index: Index) -> None:  # noqa: N802
        if isinstance(editor, QComboBox):
            editor.setEditText(str(index.data(Qt.ItemDataRole.EditRole) or ""))
            return
        super().setEditorData(editor, index)

    def setModelData(self, editor: QWidget, model: QAbstractItemModel, index: Index) -> None:  # noqa: N802
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText(), Qt.ItemDataRole.EditRole)
            return
        super().setModelData(editor, model, index)
