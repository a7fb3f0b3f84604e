"""Writes the Office files the parse-file end-to-end test attaches, with the
libraries people use to make them: an xlsx workbook (openpyxl) and a Word
document (python-docx). Usage: make_office_files.py <out-dir>"""

import sys
from pathlib import Path

import docx
import openpyxl

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Orders"
ws.append(["Order ID", "Customer Name", "Amount", "Paid"])
ws.append([1001, "Ada Lovelace", 120.5, True])
ws.append([1002, "Grace Hopper", 80, False])
ws.append([1003, "Linus Torvalds", 42.25, True])
ws.append([1004, "Margaret Hamilton", 300, True])
ws.append([1005, "Alan Turing", 15, False])
wb.create_sheet("Notes").append(["not read: parse-file reads the first sheet"])
wb.save(out / "orders.xlsx")

d = docx.Document()
d.add_heading("Onboarding checklist", level=1)
d.add_paragraph("Every new customer gets a welcome email within one day.")
d.add_paragraph("Create the CRM record", style="List Bullet")
d.add_paragraph("Send the contract", style="List Bullet")
table = d.add_table(rows=2, cols=2)
table.cell(0, 0).text = "Owner"
table.cell(0, 1).text = "Deadline"
table.cell(1, 0).text = "Sales"
table.cell(1, 1).text = "Friday"
d.save(out / "checklist.docx")
print("ok")
