from bbrowse.cli import main

main()
