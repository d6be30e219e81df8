<?php
$config['sendinblue_api_token'] = "xkey@@sib-9d35fdf68e7222dd14d8a659ecee20138270887dba64fb92ebfdb07f3dcc6d57-figazbmg88nigkyo";
