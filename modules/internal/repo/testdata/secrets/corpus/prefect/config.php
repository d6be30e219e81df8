<?php
$prefectApiToken .= 'pnu_@@i6tx2f2yujrgc8nqmqbulvdtud3xw599l4xu';
