from ehtool.cli import main

main()
