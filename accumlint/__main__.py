from accumlint.cli import main

main()
