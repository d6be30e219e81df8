<?php
$telegramBotApiToken .= '8829@@9:Am9d-0zl1iewrcswxntck55ui-e4r0egrl1';
