<?php
$azureAdClientSecret .= '~Gg8@@Q~nVhlLi2vpg_nXBGqFsbGK-t~Hus1JmTa0y';
