<?php
$telegramBotApiToken .= '2989@@537320642133:Appq3020oa3p_lyu4l2k9875m0hg8yrotu5';
