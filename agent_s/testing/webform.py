"""A form window for injection tests: ``python -m agent_s.testing.webform LOG --title T --text S``

A Tk window (class ``Webform``) titled T, showing the text S above one entry field that has the
keyboard focus. After every change the field's whole text is written to LOG (replaced), so a
test reads what was typed into the form by its effect. Only the standard library.
"""

from __future__ import annotations

import argparse
import os
import tkinter as tk


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m agent_s.testing.webform")
    parser.add_argument("log")
    parser.add_argument("--title", default="Web form")
    parser.add_argument("--text", default="")
    parser.add_argument("--geometry", default="520x200+700+40")
    args = parser.parse_args()
    root = tk.Tk(className="webform")
    root.title(args.title)
    root.geometry(args.geometry)
    tk.Label(root, text=args.text, wraplength=480, justify="left", font=("DejaVu Sans", 12)).pack(
        padx=10, pady=10, anchor="w"
    )
    value = tk.StringVar(root)
    entry = tk.Entry(root, textvariable=value, width=40, font=("DejaVu Sans Mono", 12))
    entry.pack(padx=10, pady=10, anchor="w")

    def save(*_: object) -> None:
        partial = args.log + ".part"
        with open(partial, "w", encoding="utf-8") as out:
            out.write(value.get())
        os.replace(partial, args.log)

    value.trace_add("write", save)
    save()
    root.after(100, entry.focus_force)
    root.mainloop()


if __name__ == "__main__":
    main()
